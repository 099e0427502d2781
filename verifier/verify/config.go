package verify

import (
	"errors"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/verifier/readback"
)

// ReadbacksKey is the configuration key of the declared readbacks, the
// start of the key path their errors name.
const ReadbacksKey = "readbacks"

// Defaults applied by [LoadConfig] to unset keys.
const (
	DefaultIdentity  = "verifier"
	DefaultKernelKey = "kernel"
	DefaultActionKey = "action"
	// DefaultReadTimeout bounds one read of a system of record, and the
	// opening of each readback's connector at start.
	DefaultReadTimeout = 5 * time.Second
)

// Config is the verifier's YAML configuration: the keys every sidecar has
// ([service.Config]; listen is the VerifierService listener) and its own.
// Relative paths are relative to the working directory.
type Config struct {
	service.Config `json:",inline"`
	// KernelKey is the key id (and PKI name) of the kernel's
	// capability-signing key.
	KernelKey string `json:"kernel_key"`
	// ActionKey is the key id (and PKI name) of the action adapter's
	// effect-receipt signing key.
	ActionKey string `json:"action_key"`
	// Readbacks declares, per tool name, how the verifier reads an effect
	// back and what must hold of it.
	Readbacks map[string]readback.Spec `json:"readbacks"`
	// ReadTimeout bounds one read of a system of record, and the opening
	// of each readback's connector at start.
	ReadTimeout config.Duration `json:"read_timeout"`
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
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = config.Duration(DefaultReadTimeout)
	}
}

// Validate reports every problem of c at once. The readbacks are checked
// without I/O: names, connectors, check codes, expressions compiled; their
// tables and servers are checked when they are opened at start.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate(), readback.Validate(ReadbacksKey, c.Readbacks)}
	if c.KernelKey == c.ActionKey {
		// One key for both would let the action adapter sign capabilities.
		errs = append(errs, fmt.Errorf("kernel_key and action_key are both %q", c.KernelKey))
	}
	return errors.Join(errs...)
}
