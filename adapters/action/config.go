package action

import (
	"errors"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Defaults applied by [LoadConfig] to unset keys.
const (
	DefaultIdentity            = "action"
	DefaultKernelKey           = "kernel"
	DefaultRecordSweepInterval = 5 * time.Second
)

// Config is the action adapter's YAML configuration: the keys every
// service has (listen is the ActionService listener) and its own. Relative
// paths are relative to the working directory.
type Config struct {
	service.Config `json:",inline"`
	// KernelKey is the key id (and PKI name) of the kernel's
	// capability-signing key.
	KernelKey string `json:"kernel_key"`
	// PaymentsDatabase is the payments ledger's SQLite file; this adapter
	// is its only writer and creates it.
	PaymentsDatabase string `json:"payments_database"`
	// ClaimsDatabase, when set, is the claims SQLite file the evidence
	// adapter reads, opened read-only: before a first execution the
	// refund's claim must still be at the capability's state version.
	ClaimsDatabase string `json:"claims_database"`
	// RecordSweepInterval is how often effect receipts the kernel has not
	// logged yet are sent again.
	RecordSweepInterval config.Duration `json:"record_sweep_interval"`
}

// LoadConfig reads path strictly, applies defaults and validates.
func LoadConfig(path string) (Config, error) { return config.LoadAs[Config](path) }

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() {
	c.Config.ApplyDefaults(DefaultIdentity)
	if c.KernelKey == "" {
		c.KernelKey = DefaultKernelKey
	}
	if c.RecordSweepInterval <= 0 {
		c.RecordSweepInterval = config.Duration(DefaultRecordSweepInterval)
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.PaymentsDatabase == "" {
		errs = append(errs, errors.New("payments_database is required"))
	}
	return errors.Join(errs...)
}
