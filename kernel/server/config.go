package server

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
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
	// Database is the SQLite file of the grant store and journal.
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
	if c.Listen.Agent == "" || c.Listen.Adapter == "" || c.Listen.Governance == "" {
		errs = append(errs, errors.New("listen.agent, listen.adapter and listen.governance are required"))
	}
	if c.Durability != store.DurabilityFull && c.Durability != store.DurabilityNormal {
		errs = append(errs, fmt.Errorf("durability must be full or normal, got %q", c.Durability))
	}
	if _, err := c.authorities(); err != nil {
		errs = append(errs, err)
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
