package action

import (
	"errors"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
)

// Defaults applied by [LoadConfig] to unset keys.
const (
	DefaultIdentity            = "action"
	DefaultListen              = "127.0.0.1:0"
	DefaultKernelTimeout       = 3 * time.Second
	DefaultKernelKey           = "kernel"
	DefaultShutdownGrace       = 10 * time.Second
	DefaultRecordSweepInterval = 5 * time.Second
)

// Config is the action adapter's YAML configuration. Relative paths are
// relative to the working directory.
type Config struct {
	// Identity is this process's name in the PKI directory: its TLS
	// certificate, its receipt-signing key and the key id of its receipts.
	Identity string `json:"identity"`
	// PKIDir is the directory written by pki.DevInit.
	PKIDir string `json:"pki_dir"`
	// Listen is the host:port of the ActionService listener.
	Listen string `json:"listen"`
	// AddrFile, when set, receives the bound address as {"grpc": "host:port"}.
	AddrFile string `json:"addr_file"`
	// Kernel is the host:port of the kernel's adapter listener.
	Kernel string `json:"kernel"`
	// KernelTimeout bounds each call to the kernel.
	KernelTimeout config.Duration `json:"kernel_timeout"`
	// KernelKey is the key id (and PKI name) of the kernel's
	// capability-signing key.
	KernelKey string `json:"kernel_key"`
	// PaymentsDatabase is the payments ledger's SQLite file; this adapter
	// is its only writer and creates it.
	PaymentsDatabase string `json:"payments_database"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// ShutdownGrace bounds the drain of in-flight calls on shutdown.
	ShutdownGrace config.Duration `json:"shutdown_grace"`
	// Reflection registers gRPC server reflection.
	Reflection bool `json:"reflection"`
	// RecordSweepInterval is how often effect receipts the kernel has not
	// logged yet are sent again.
	RecordSweepInterval config.Duration `json:"record_sweep_interval"`
}

// LoadConfig reads path strictly, applies defaults and validates.
func LoadConfig(path string) (Config, error) {
	var c Config
	if err := config.Load(path, &c); err != nil {
		return Config{}, err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() {
	if c.Identity == "" {
		c.Identity = DefaultIdentity
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.KernelTimeout <= 0 {
		c.KernelTimeout = config.Duration(DefaultKernelTimeout)
	}
	if c.KernelKey == "" {
		c.KernelKey = DefaultKernelKey
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = config.Duration(DefaultShutdownGrace)
	}
	if c.RecordSweepInterval <= 0 {
		c.RecordSweepInterval = config.Duration(DefaultRecordSweepInterval)
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.PKIDir == "" {
		errs = append(errs, errors.New("pki_dir is required"))
	}
	if c.Kernel == "" {
		errs = append(errs, errors.New("kernel is required"))
	}
	if c.PaymentsDatabase == "" {
		errs = append(errs, errors.New("payments_database is required"))
	}
	return errors.Join(errs...)
}
