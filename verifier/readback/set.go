package readback

import (
	"context"
	"errors"
	"maps"
	"slices"
)

// Set is the readbacks of a verifier, one per tool, with their connectors
// open. It is safe for concurrent use.
type Set struct {
	byTool map[string]*Readback
}

// Open compiles specs (tool name to declaration, found under the
// configuration key path) and opens their connectors: SQL databases
// read-only, with their tables and columns checked; MCP servers connected
// as client. Every problem names its key path. On error nothing stays
// open.
func Open(ctx context.Context, path string, specs map[string]Spec, client string) (*Set, error) {
	byTool, err := compileAll(path, specs)
	if err != nil {
		return nil, err
	}
	s := &Set{byTool: byTool}
	var errs []error
	for _, tool := range s.Tools() {
		if err := byTool[tool].conn.open(ctx, client); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Get returns the readback of tool.
func (s *Set) Get(tool string) (*Readback, bool) {
	rb, ok := s.byTool[tool]
	return rb, ok
}

// Tools are the names of the tools with a readback, sorted.
func (s *Set) Tools() []string { return slices.Sorted(maps.Keys(s.byTool)) }

// Close closes every connector.
func (s *Set) Close() error {
	var errs []error
	for _, rb := range s.byTool {
		errs = append(errs, rb.conn.close())
	}
	return errors.Join(errs...)
}
