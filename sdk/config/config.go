package config

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// Load reads path into v (a pointer to a struct with json tags), refusing
// unknown keys.
func Load(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// Checked is a configuration that fills its own defaults and validates
// itself, reporting every problem at once.
type Checked interface {
	// ApplyDefaults fills unset keys with their defaults.
	ApplyDefaults()
	// Validate reports every problem of the configuration.
	Validate() error
}

// LoadChecked reads path strictly into c (a pointer to a struct with json
// tags), then applies its defaults and validates it. A validation error is
// prefixed with the path.
func LoadChecked(path string, c Checked) error {
	if err := Load(path, c); err != nil {
		return err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// LoadAs reads path strictly into a new C, applies its defaults and
// validates it, as [LoadChecked] does; on error it returns the zero C.
func LoadAs[C any, P interface {
	*C
	Checked
}](path string) (C, error) {
	var c C
	if err := LoadChecked(path, P(&c)); err != nil {
		var zero C
		return zero, err
	}
	return c, nil
}

// Write writes v as YAML to path, e.g. for a launcher that configures
// processes it starts.
func Write(path string, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return os.WriteFile(path, data, 0o600)
}

// Duration is a time.Duration written as "5m" in YAML.
type Duration time.Duration

// D returns the duration, or def when unset.
func (d Duration) D(def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return time.Duration(d)
}

// MarshalJSON writes "5m0s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "5m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}
