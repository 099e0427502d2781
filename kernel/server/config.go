package server

import (
	"fmt"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/store"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/config"
)

// Config is the kernel's configuration file.
type Config struct {
	// Identity names the kernel's certificate, key and signing key in PKIDir.
	Identity string `json:"identity"`
	PKIDir   string `json:"pki_dir"`
	// Database is the SQLite file of the grant store and journal.
	Database   string           `json:"database"`
	Durability store.Durability `json:"durability"`
	Listen     Listen           `json:"listen"`
	// AddrFile, when set, receives the bound addresses as JSON.
	AddrFile      string          `json:"addr_file"`
	Reflection    bool            `json:"reflection"`
	LogLevel      string          `json:"log_level"`
	ShutdownGrace config.Duration `json:"shutdown_grace"`
	CapabilityTTL config.Duration `json:"capability_ttl"`
	// Peers names the identities whose signing keys the kernel trusts, per
	// adapter role.
	Peers Peers `json:"peers"`
	// PromotionAuthorities lists, per ledger scope (e.g. SCOPE_TASK), the
	// principals that may promote.
	PromotionAuthorities map[string][]string `json:"promotion_authorities"`
	// Checkpoints configures the signed checkpoints of the journal.
	Checkpoints Checkpoints `json:"checkpoints"`
}

// Checkpoints configures the signed checkpoints of the journal.
type Checkpoints struct {
	// Dir receives the checkpoints, outside the database (default: the
	// database's path with ".checkpoints").
	Dir string `json:"dir"`
	// Origin names the log in its checkpoints (default
	// "ambit-kernel/<identity>").
	Origin string `json:"origin"`
	// A checkpoint is signed once EveryEntries entries were appended since
	// the last (default 1000), or Every after the last when any was
	// (default 1s).
	EveryEntries uint64          `json:"every_entries"`
	Every        config.Duration `json:"every"`
	// Keep is how many checkpoints Dir keeps (default 10000; the latest is
	// always kept).
	Keep int `json:"keep"`
}

// checkpointDir is the configured checkpoint directory or its default.
func (c *Config) checkpointDir() string {
	if c.Checkpoints.Dir != "" {
		return c.Checkpoints.Dir
	}
	return c.Database + ".checkpoints"
}

// origin is the configured origin or its default.
func (c *Config) origin() string {
	if c.Checkpoints.Origin != "" {
		return c.Checkpoints.Origin
	}
	return "ambit-kernel/" + c.Identity
}

// Listen holds the three listeners' addresses.
type Listen struct {
	Agent      string `json:"agent"`
	Adapter    string `json:"adapter"`
	Governance string `json:"governance"`
}

// Peers names trusted signers per role.
type Peers struct {
	Evidence []string `json:"evidence"`
	Action   []string `json:"action"`
	Verifier []string `json:"verifier"`
}

func (c *Config) check() error {
	switch {
	case c.Identity == "":
		return fmt.Errorf("config: identity is required")
	case c.PKIDir == "":
		return fmt.Errorf("config: pki_dir is required")
	case c.Database == "":
		return fmt.Errorf("config: database is required")
	case c.Listen.Agent == "" || c.Listen.Adapter == "" || c.Listen.Governance == "":
		return fmt.Errorf("config: listen.agent, listen.adapter and listen.governance are required")
	case c.Durability != "" && c.Durability != store.DurabilityFull && c.Durability != store.DurabilityNormal:
		return fmt.Errorf("config: durability must be full or normal, got %q", c.Durability)
	case c.Checkpoints.Keep < 0:
		return fmt.Errorf("config: checkpoints.keep must not be negative")
	}
	if err := checkpoint.CheckOrigin(c.origin()); err != nil {
		return fmt.Errorf("config: checkpoints.origin: %w", err)
	}
	return nil
}

func (c *Config) authorities() (canon.Authorities, error) {
	out := canon.Authorities{}
	for name, principals := range c.PromotionAuthorities {
		v, ok := ledgerv1.Scope_value[name]
		if !ok || v == 0 {
			return nil, fmt.Errorf("config: promotion_authorities: unknown scope %q", name)
		}
		out[ledgerv1.Scope(v)] = principals
	}
	return out, nil
}
