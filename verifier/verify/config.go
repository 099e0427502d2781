package verify

import (
	"errors"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
)

// Defaults applied by [LoadConfig] to unset keys.
const (
	DefaultIdentity      = "verifier"
	DefaultListen        = "127.0.0.1:0"
	DefaultKernelTimeout = 3 * time.Second
	DefaultKernelKey     = "kernel"
	DefaultActionKey     = "action"
	DefaultShutdownGrace = 10 * time.Second
)

// Config is the verifier's YAML configuration. Relative paths are relative
// to the working directory.
type Config struct {
	// Identity is this process's name in the PKI directory: its TLS
	// certificate, its receipt-signing key and the key id of its receipts.
	Identity string `json:"identity"`
	// PKIDir is the directory written by pki.DevInit.
	PKIDir string `json:"pki_dir"`
	// Listen is the host:port of the VerifierService listener.
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
	// ActionKey is the key id (and PKI name) of the action adapter's
	// effect-receipt signing key.
	ActionKey string `json:"action_key"`
	// PaymentsDatabase is the payments ledger's SQLite file, opened
	// read-only.
	PaymentsDatabase string `json:"payments_database"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// ShutdownGrace bounds the drain of in-flight calls on shutdown.
	ShutdownGrace config.Duration `json:"shutdown_grace"`
	// Reflection registers gRPC server reflection.
	Reflection bool `json:"reflection"`
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
	if c.ActionKey == "" {
		c.ActionKey = DefaultActionKey
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = config.Duration(DefaultShutdownGrace)
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
	if c.KernelKey == c.ActionKey {
		// One key for both would let the action adapter sign capabilities.
		errs = append(errs, fmt.Errorf("kernel_key and action_key are both %q", c.KernelKey))
	}
	return errors.Join(errs...)
}
