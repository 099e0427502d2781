package evidence

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ambitkernel/ambit/adapters/claims"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
)

// DefaultIdentity is the identity [LoadConfig] gives an unset identity.
const DefaultIdentity = "evidence"

// Config is the evidence adapter's YAML configuration: the keys every
// service has (listen is the EvidenceService listener) and its sources.
// Relative paths are relative to the working directory.
type Config struct {
	service.Config `json:",inline"`
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
func LoadConfig(path string) (Config, error) { return config.LoadAs[Config](path) }

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() { c.Config.ApplyDefaults(DefaultIdentity) }

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate()}
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
