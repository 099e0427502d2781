package server

import (
	"fmt"

	"github.com/ambitkernel/ambit/kernel/canon"
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
