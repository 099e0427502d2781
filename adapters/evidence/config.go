package evidence

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ambitkernel/ambit/adapters/claims"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/config"
)

// Defaults applied by [LoadConfig] to unset keys.
const (
	DefaultIdentity      = "evidence"
	DefaultListen        = "127.0.0.1:0"
	DefaultKernelTimeout = 3 * time.Second
	DefaultShutdownGrace = 10 * time.Second
)

// Config is the evidence adapter's YAML configuration. Relative paths are
// relative to the working directory.
type Config struct {
	// Identity is this process's name in the PKI directory: its TLS
	// certificate, its receipt-signing key and the key id of its receipts.
	Identity string `json:"identity"`
	// PKIDir is the directory written by pki.DevInit.
	PKIDir string `json:"pki_dir"`
	// Listen is the host:port of the EvidenceService listener.
	Listen string `json:"listen"`
	// AddrFile, when set, receives the bound address as {"grpc": "host:port"}.
	AddrFile string `json:"addr_file"`
	// Kernel is the host:port of the kernel's adapter listener.
	Kernel string `json:"kernel"`
	// KernelTimeout bounds each call to the kernel.
	KernelTimeout config.Duration `json:"kernel_timeout"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// ShutdownGrace bounds the drain of in-flight calls on shutdown.
	ShutdownGrace config.Duration `json:"shutdown_grace"`
	// Reflection registers gRPC server reflection.
	Reflection bool `json:"reflection"`
	// Sources maps a source name (as contracts and requests name it, e.g.
	// "claims_db") to its table.
	Sources map[string]SourceConfig `json:"sources"`
}

// SourceConfig is one evidence source.
type SourceConfig struct {
	// Kind is "claims" or "receipts".
	Kind string `json:"kind"`
	// Database is the SQLite file; the adapter opens it read-only.
	Database string `json:"database"`
	// Provenance is PROVENANCE_TRUSTED, PROVENANCE_UNTRUSTED or
	// PROVENANCE_INSTRUCTION_BEARING. The stricter of this and the
	// contract's class goes into each receipt.
	Provenance string `json:"provenance"`
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
	if len(c.Sources) == 0 {
		errs = append(errs, errors.New("sources: at least one source is required"))
	}
	names := make([]string, 0, len(c.Sources))
	for name := range c.Sources {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := c.Sources[name]
		if name == "" {
			errs = append(errs, errors.New("sources: empty source name"))
		}
		if !claims.Kind(s.Kind).Valid() {
			errs = append(errs, fmt.Errorf("sources.%s.kind: %q, want %s or %s", name, s.Kind, claims.KindClaims, claims.KindReceipts))
		}
		if s.Database == "" {
			errs = append(errs, fmt.Errorf("sources.%s.database is required", name))
		}
		if _, err := ParseProvenance(s.Provenance); err != nil {
			errs = append(errs, fmt.Errorf("sources.%s.provenance: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// ParseProvenance parses a provenance class name; unspecified is refused.
func ParseProvenance(s string) (contractv1.Provenance, error) {
	v, ok := contractv1.Provenance_value[s]
	if !ok || contractv1.Provenance(v) == contractv1.Provenance_PROVENANCE_UNSPECIFIED {
		return 0, fmt.Errorf("%q, want PROVENANCE_TRUSTED, PROVENANCE_UNTRUSTED or PROVENANCE_INSTRUCTION_BEARING", s)
	}
	return contractv1.Provenance(v), nil
}
