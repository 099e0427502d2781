package server

import (
	"errors"
	"fmt"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"slices"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/store"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Defaults [Config.ApplyDefaults] gives unset keys.
const (
	DefaultIdentity      = "kernel"
	DefaultCapabilityTTL = 5 * time.Minute
)

// Config is the kernel's configuration file: the keys every Ambit process
// has (service.Common: identity, pki_dir, metrics, tracing…) and the
// kernel's own.
type Config struct {
	service.Common `json:",inline"`
	// Database holds the grant store and journal: an SQLite file (the
	// embedded default), or a postgres:// URL that kernel replicas share.
	Database   string           `json:"database"`
	Durability store.Durability `json:"durability"`
	// Listen holds the three listeners' addresses.
	Listen        Listen          `json:"listen"`
	CapabilityTTL config.Duration `json:"capability_ttl"`
	// Peers names the identities whose signing keys the kernel trusts, per
	// adapter role; their public keys are read from pki_dir.
	Peers Peers `json:"peers"`
	// PromotionAuthorities lists, per ledger scope (e.g. SCOPE_TASK), the
	// principals that may promote.
	PromotionAuthorities map[string][]string `json:"promotion_authorities"`
	// Checkpoints configures the signed checkpoints of the journal.
	Checkpoints Checkpoints `json:"checkpoints"`
	// LedgerSnapshotEvery is how many ledger transitions the kernel folds
	// between two snapshots of the authority ledger, from which it starts
	// instead of replaying the whole journal (default 10000; -1: only at
	// shutdown).
	LedgerSnapshotEvery int `json:"ledger_snapshot_every"`
}

// Checkpoints configures the signed checkpoints of the journal.
type Checkpoints struct {
	// Dir receives the checkpoints, outside the database (default: the
	// SQLite database's path with ".checkpoints"; required with
	// PostgreSQL).
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
	// Serves binds per-agent sidecars to their agent: a sidecar's
	// identity (one of the names above) → the one agent it serves. Such a
	// sidecar is refused (PermissionDenied) a read, redemption, effect or
	// readback for a task or capability of any other agent. A peer not
	// named here is shared and serves every agent.
	Serves map[string]string `json:"serves"`
}

// authority is the peers as the kernel's core takes them.
func (p Peers) authority() authority.Peers {
	return authority.Peers{Evidence: p.Evidence, Action: p.Action, Verifier: p.Verifier, Serves: p.Serves}
}

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() {
	c.Common.ApplyDefaults(DefaultIdentity)
	if c.Durability == "" {
		c.Durability = store.DurabilityFull
	}
	if c.CapabilityTTL <= 0 {
		c.CapabilityTTL = config.Duration(DefaultCapabilityTTL)
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	errs := []error{c.Common.Validate()}
	if c.Database == "" {
		errs = append(errs, errors.New("database is required"))
	}
	if sqldb.IsPostgres(c.Database) && c.Checkpoints.Dir == "" {
		errs = append(errs, errors.New("checkpoints.dir is required when database is a PostgreSQL URL"))
	}
	if c.Listen.Agent == "" || c.Listen.Adapter == "" || c.Listen.Governance == "" {
		errs = append(errs, errors.New("listen.agent, listen.adapter and listen.governance are required"))
	}
	if err := c.Durability.Check(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Peers.authority().Check(); err != nil {
		errs = append(errs, fmt.Errorf("peers.serves: %w", err))
	}
	if _, err := c.authorities(); err != nil {
		errs = append(errs, err)
	}
	if c.Checkpoints.Keep < 0 {
		errs = append(errs, errors.New("checkpoints.keep must not be negative"))
	}
	if err := checkpoint.CheckOrigin(c.origin()); err != nil {
		errs = append(errs, fmt.Errorf("checkpoints.origin: %w", err))
	}
	return errors.Join(errs...)
}

func (c *Config) authorities() (canon.Authorities, error) {
	out := canon.Authorities{}
	var errs []error
	names := make([]string, 0, len(c.PromotionAuthorities))
	for name := range c.PromotionAuthorities {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v, ok := ledgerv1.Scope_value[name]
		if !ok || v == 0 {
			errs = append(errs, fmt.Errorf("promotion_authorities: unknown scope %q", name))
			continue
		}
		out[ledgerv1.Scope(v)] = c.PromotionAuthorities[name]
	}
	return out, errors.Join(errs...)
}
