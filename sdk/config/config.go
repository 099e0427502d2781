package config

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ambitkernel/ambit/sdk/document"
)

// EnvPrefix starts the name of every environment variable that overrides
// a configuration key: AMBIT_ and the key path in upper case, joined by
// underscores (log_level → AMBIT_LOG_LEVEL, listen.agent →
// AMBIT_LISTEN_AGENT).
const EnvPrefix = "AMBIT_"

// Env looks up an environment variable, as os.LookupEnv does.
type Env func(key string) (string, bool)

// Load reads path strictly into v (a pointer to a struct with json tags):
// a duplicate key, an unknown key (in exact case) and a value of the wrong
// kind are errors that name the file, the line and the key path.
func Load(path string, v any) error {
	return LoadEnv(path, nil, v)
}

// LoadEnv is [Load], with the keys that env sets overridden (see
// [EnvPrefix] and [EnvVars]). A string key takes the variable's value as
// it stands; any other key reads it as YAML, so AMBIT_REFLECTION=true and
// AMBIT_PEERS_EVIDENCE='[evidence, evidence-b]' work. A nil env reads no
// variable.
func LoadEnv(path string, env Env, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	d, err := document.Parse(data)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if env != nil {
		vars, err := envVars(reflect.TypeOf(v))
		if err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
		for _, ev := range vars {
			value, ok := env(ev.name)
			if !ok {
				continue
			}
			if err := d.Set(ev.keys, value, ev.literal); err != nil {
				return fmt.Errorf("config %s: %s: %w", path, ev.name, err)
			}
		}
	}
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// envVar is one environment variable that overrides a key.
type envVar struct {
	name    string
	keys    []string
	literal bool
}

// EnvVars lists the environment variables that override keys of v's type
// (a pointer to a configuration struct), each with the key path it sets,
// e.g. "AMBIT_LOG_LEVEL log_level". Keys inside a struct-valued key have
// variables of their own; maps and lists are set whole.
func EnvVars(v any) ([]string, error) {
	vars, err := envVars(reflect.TypeOf(v))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(vars))
	for i, ev := range vars {
		out[i] = ev.name + " " + strings.Join(ev.keys, ".")
	}
	return out, nil
}

func envVars(t reflect.Type) ([]envVar, error) {
	var out []envVar
	collectEnv(t, nil, &out)
	slices.SortFunc(out, func(a, b envVar) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(out); i++ {
		if out[i].name == out[i-1].name {
			return nil, fmt.Errorf("keys %s and %s share the environment variable %s",
				strings.Join(out[i-1].keys, "."), strings.Join(out[i].keys, "."), out[i].name)
		}
	}
	return out, nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func collectEnv(t reflect.Type, keys []string, out *[]envVar) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		name := EnvPrefix + strings.ToUpper(strings.Join(keys, "_"))
		// A string key keeps "0123" or "true" as written; a type with its
		// own decoding (a duration) reads YAML, which passes "5s" as text.
		literal := t.Kind() == reflect.String && !reflect.PointerTo(t).Implements(jsonUnmarshaler)
		*out = append(*out, envVar{name: name, keys: slices.Clone(keys), literal: literal})
		return
	}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			collectEnv(f.Type, keys, out)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		collectEnv(f.Type, append(keys, name), out)
	}
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
// tags) with the overrides env sets ([LoadEnv]; nil: none), then applies
// its defaults and validates it. A validation error is prefixed with the
// path.
func LoadChecked(path string, env Env, c Checked) error {
	if err := LoadEnv(path, env, c); err != nil {
		return err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// LoadAs reads path strictly into a new C, applies its defaults and
// validates it, as [LoadChecked] does without environment overrides; on
// error it returns the zero C.
func LoadAs[C any, P interface {
	*C
	Checked
}](path string) (C, error) {
	var c C
	if err := LoadChecked(path, nil, P(&c)); err != nil {
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
