package verify

import (
	"errors"
	"fmt"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Defaults applied by [LoadConfig] to unset keys.
const (
	DefaultIdentity  = "verifier"
	DefaultKernelKey = "kernel"
	DefaultActionKey = "action"
)

// Config is the verifier's YAML configuration: the keys every service has
// (listen is the VerifierService listener) and its own. Relative paths are
// relative to the working directory.
type Config struct {
	service.Config `json:",inline"`
	// KernelKey is the key id (and PKI name) of the kernel's
	// capability-signing key.
	KernelKey string `json:"kernel_key"`
	// ActionKey is the key id (and PKI name) of the action adapter's
	// effect-receipt signing key.
	ActionKey string `json:"action_key"`
	// PaymentsDatabase is the payments ledger's SQLite file, opened
	// read-only.
	PaymentsDatabase string `json:"payments_database"`
}

// LoadConfig reads path strictly, applies defaults and validates.
func LoadConfig(path string) (Config, error) { return config.LoadAs[Config](path) }

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() {
	c.Config.ApplyDefaults(DefaultIdentity)
	if c.KernelKey == "" {
		c.KernelKey = DefaultKernelKey
	}
	if c.ActionKey == "" {
		c.ActionKey = DefaultActionKey
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.PaymentsDatabase == "" {
		errs = append(errs, errors.New("payments_database is required"))
	}
	if c.KernelKey == c.ActionKey {
		// One key for both would let the action adapter sign capabilities.
		errs = append(errs, fmt.Errorf("kernel_key and action_key are both %q", c.KernelKey))
	}
	return errors.Join(errs...)
}
