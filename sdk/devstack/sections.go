package devstack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/ambitkernel/ambit/sdk/document"
)

// The shapes of an example's evidence, action and verifier files: the
// keys of each process's configuration an example declares. Decoding is
// strict, so any other key is an error naming it.
type (
	evidenceFile struct {
		Sources map[string]json.RawMessage `json:"sources"`
	}
	actionFile struct {
		Database    string                     `json:"database"`
		StateChecks map[string]json.RawMessage `json:"state_checks"`
		Executors   map[string]json.RawMessage `json:"executors"`
	}
	verifierFile struct {
		Readbacks map[string]json.RawMessage `json:"readbacks"`
	}
)

// sections are the declarations of every enabled example, merged: what
// goes into the evidence adapter's, the action adapter's and the
// verifier's configurations beside their own keys.
type sections struct {
	sources, stateChecks, executors, readbacks map[string]json.RawMessage
	// actionDB is the action adapter's own database; every example that
	// names one must name the same.
	actionDB string
	// from names the example each entry came from ("sources.records_db"
	// → the example's name), so that a clash names both.
	from map[string]string
}

func newSections() *sections {
	return &sections{
		sources: map[string]json.RawMessage{}, stateChecks: map[string]json.RawMessage{},
		executors: map[string]json.RawMessage{}, readbacks: map[string]json.RawMessage{},
		from: map[string]string{},
	}
}

// add merges an example's files, expanded with vars.
func (s *sections) add(e *Example, vars map[string]string) error {
	var errs []error
	if f := e.Files.Evidence; f != "" {
		var ev evidenceFile
		if err := readSection(e, f, vars, &ev); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, s.merge(e.Name, "sources", s.sources, ev.Sources)...)
		}
	}
	if f := e.Files.Action; f != "" {
		var act actionFile
		if err := readSection(e, f, vars, &act); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, s.merge(e.Name, "state_checks", s.stateChecks, act.StateChecks)...)
			errs = append(errs, s.merge(e.Name, "executors", s.executors, act.Executors)...)
			switch {
			case act.Database == "":
			case s.actionDB == "":
				s.actionDB, s.from["database"] = act.Database, e.Name
			case s.actionDB != act.Database:
				errs = append(errs, fmt.Errorf("example %s: database %q differs from %q, which example %s gives: the action adapter has one database",
					e.Name, act.Database, s.actionDB, s.from["database"]))
			}
		}
	}
	if f := e.Files.Verifier; f != "" {
		var ver verifierFile
		if err := readSection(e, f, vars, &ver); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, s.merge(e.Name, "readbacks", s.readbacks, ver.Readbacks)...)
		}
	}
	return errors.Join(errs...)
}

// merge adds src's entries to dst. A name declared by two examples must
// be declared alike.
func (s *sections) merge(example, key string, dst, src map[string]json.RawMessage) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(src)) {
		path := key + "." + name
		if old, ok := dst[name]; ok && !sameJSON(old, src[name]) {
			errs = append(errs, fmt.Errorf("example %s: %s is declared differently by example %s", example, path, s.from[path]))
			continue
		}
		if _, ok := dst[name]; !ok {
			dst[name], s.from[path] = src[name], example
		}
	}
	return errs
}

func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// readSection reads one of an example's files, expands its placeholders
// and decodes it strictly into v.
func readSection(e *Example, file string, vars map[string]string, v any) error {
	data, err := os.ReadFile(e.Path(file))
	if err != nil {
		return fmt.Errorf("example %s: %w", e.Name, err)
	}
	expanded, err := expand(string(data), vars)
	if err != nil {
		return fmt.Errorf("example %s: %s: %w", e.Name, file, err)
	}
	if err := document.Decode([]byte(expanded), v); err != nil {
		return fmt.Errorf("example %s: %s: %w", e.Name, file, err)
	}
	return nil
}
