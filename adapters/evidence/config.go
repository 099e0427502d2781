package evidence

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Defaults and bounds of the configuration.
const (
	// DefaultIdentity is the identity [LoadConfig] gives an unset identity.
	DefaultIdentity = "evidence"
	// DefaultWatchInterval is how often watched records are polled when
	// watch_interval is unset.
	DefaultWatchInterval = 500 * time.Millisecond
	// MinWatchInterval keeps a misconfigured poll from hammering the
	// sources and the kernel.
	MinWatchInterval = 10 * time.Millisecond
	// maxSourceName is the longest source name a contract can grant.
	maxSourceName = 128
)

// Config is the evidence adapter's YAML configuration: the keys every
// sidecar has ([service.Config]; listen is the EvidenceService listener),
// the watch interval and the declared sources. Relative paths are relative to the working
// directory.
type Config struct {
	service.Config `json:",inline"`
	// WatchInterval is how often the state versions of the records the
	// kernel watches are read again (coupling rule 3).
	WatchInterval config.Duration `json:"watch_interval"`
	// Sources maps a source name, as contracts and requests name it (e.g.
	// "records_db"), to its connector.
	Sources map[string]SourceConfig `json:"sources"`
}

// SourceConfig is one declared source: its provenance class and exactly
// one connector.
type SourceConfig struct {
	// Provenance is PROVENANCE_TRUSTED, PROVENANCE_UNTRUSTED or
	// PROVENANCE_INSTRUCTION_BEARING. The stricter of this and the
	// contract's class goes into each receipt.
	Provenance string `json:"provenance"`
	// SQL reads one table.
	SQL *SQLSource `json:"sql,omitempty"`
	// MCP calls a read-only tool of an upstream MCP server.
	MCP *MCPSource `json:"mcp,omitempty"`
}

// SQLSource is a table of an SQL database; a record is one row.
type SQLSource struct {
	// Database is an SQLite file (a path or sqlite:PATH) or a
	// postgres:// URL; it is opened read-only.
	Database string `json:"database"`
	// Table is the table read.
	Table string `json:"table"`
	// Key is the column a record key is matched against.
	Key string `json:"key"`
	// Subject is the column naming the record's data subject; it must be
	// one of Columns.
	Subject string `json:"subject"`
	// StateVersion is a CEL expression over `record` (the declared
	// columns) giving the record's state version, e.g.
	// `"v" + string(record.row_version)`.
	StateVersion string `json:"state_version"`
	// Columns are all the columns the source may read: nothing else is
	// ever selected, computed on or released.
	Columns []string `json:"columns"`
}

// MCPSource is a read-only tool of an upstream MCP server; a record is the
// tool's JSON object result for a key.
type MCPSource struct {
	// Server is how to reach the server.
	Server mcpconn.Config `json:"server"`
	// Tool is the tool called to read a record.
	Tool string `json:"tool"`
	// KeyArgument is the argument the record key is passed in: the tool is
	// called with {KeyArgument: key}.
	KeyArgument string `json:"key_argument"`
	// Subject is the result field naming the data subject; it must be one
	// of Columns.
	Subject string `json:"subject"`
	// StateVersion is a CEL expression over `record` giving the record's
	// state version.
	StateVersion string `json:"state_version"`
	// Columns are the top-level result fields the source may read; other
	// fields of the result are dropped as soon as it arrives.
	Columns []string `json:"columns"`
}

// LoadConfig reads path strictly, applies defaults and validates.
func LoadConfig(path string) (Config, error) { return config.LoadAs[Config](path) }

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() {
	c.Config.ApplyDefaults(DefaultIdentity)
	if c.WatchInterval <= 0 {
		c.WatchInterval = config.Duration(DefaultWatchInterval)
	}
}

// Validate reports every problem of c at once, each naming its key path
// (e.g. "sources.records_db.sql.columns[2]"). What needs the source itself
// (the table's columns) is checked when the sources are opened
// ([OpenSources]).
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate()}
	if d := c.WatchInterval.D(DefaultWatchInterval); d < MinWatchInterval {
		errs = append(errs, fmt.Errorf("watch_interval: %s is shorter than %s", d, MinWatchInterval))
	}
	if len(c.Sources) == 0 {
		errs = append(errs, errors.New("sources: at least one source is required"))
	}
	for _, name := range sortedNames(c.Sources) {
		errs = append(errs, c.Sources[name].validate("sources."+name, name)...)
	}
	return errors.Join(errs...)
}

func (s SourceConfig) validate(path, name string) []error {
	var errs []error
	switch {
	case name == "" || len(name) > maxSourceName:
		errs = append(errs, fmt.Errorf("%s: a source name has 1 to %d characters", path, maxSourceName))
	case strings.Contains(name, "/"):
		// Records are named "source/key" throughout the kernel.
		errs = append(errs, fmt.Errorf("%s: a source name may not contain '/'", path))
	}
	if _, err := ParseProvenance(s.Provenance); err != nil {
		errs = append(errs, fmt.Errorf("%s.provenance: %w", path, err))
	}
	switch {
	case s.SQL == nil && s.MCP == nil:
		errs = append(errs, fmt.Errorf("%s: one connector is required: sql or mcp", path))
	case s.SQL != nil && s.MCP != nil:
		errs = append(errs, fmt.Errorf("%s: give one connector, sql or mcp, not both", path))
	case s.SQL != nil:
		errs = append(errs, s.SQL.validate(path+".sql")...)
	default:
		errs = append(errs, s.MCP.validate(path+".mcp")...)
	}
	return errs
}

func (s *SQLSource) validate(path string) []error {
	var errs []error
	if s.Database == "" {
		errs = append(errs, fmt.Errorf("%s.database is required", path))
	}
	for _, n := range []struct{ key, value string }{{"table", s.Table}, {"key", s.Key}} {
		if err := sqldb.CheckIdent(n.value); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", path, n.key, err))
		}
	}
	errs = append(errs, checkColumns(path, s.Columns, sqldb.CheckIdent)...)
	errs = append(errs, checkShape(path, s.Subject, s.StateVersion, s.Columns)...)
	return errs
}

func (s *MCPSource) validate(path string) []error {
	var errs []error
	if err := s.Server.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s.server: %w", path, err))
	}
	if s.Tool == "" {
		errs = append(errs, fmt.Errorf("%s.tool is required", path))
	}
	if s.KeyArgument == "" {
		errs = append(errs, fmt.Errorf("%s.key_argument is required", path))
	}
	errs = append(errs, checkColumns(path, s.Columns, func(c string) error {
		if c == "" {
			return errors.New("empty field name")
		}
		return nil
	})...)
	errs = append(errs, checkShape(path, s.Subject, s.StateVersion, s.Columns)...)
	return errs
}

// checkColumns checks each column name and refuses repeats.
func checkColumns(path string, columns []string, check func(string) error) []error {
	if len(columns) == 0 {
		return []error{fmt.Errorf("%s.columns: at least one column is required", path)}
	}
	var errs []error
	for i, c := range columns {
		if err := check(c); err != nil {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: %w", path, i, err))
		}
		if slices.Index(columns, c) < i {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: %q is repeated", path, i, c))
		}
	}
	return errs
}

// checkShape checks what every connector computes from a record: the
// subject and the state version read declared columns only.
func checkShape(path, subject, stateVersion string, columns []string) []error {
	var errs []error
	switch {
	case subject == "":
		errs = append(errs, fmt.Errorf("%s.subject is required", path))
	case !slices.Contains(columns, subject):
		errs = append(errs, fmt.Errorf("%s.subject: %q is not one of the declared columns", path, subject))
	}
	if stateVersion == "" {
		errs = append(errs, fmt.Errorf("%s.state_version is required", path))
	} else if _, err := compileStateVersion(stateVersion, columns); err != nil {
		errs = append(errs, fmt.Errorf("%s.state_version: %w", path, err))
	}
	return errs
}

// compileStateVersion compiles a state-version expression and refuses one
// that reads an undeclared column.
func compileStateVersion(src string, columns []string) (*expr.Program, error) {
	p, err := recordEnv().Compile(src, expr.Scalar)
	if err != nil {
		return nil, err
	}
	if c, ok := undeclared(p, columns); ok {
		return nil, fmt.Errorf("%q reads %q, which is not a declared column", src, c)
	}
	return p, nil
}

// undeclared returns the first column p reads that is not in columns.
func undeclared(p *expr.Program, columns []string) (string, bool) {
	reads, _ := p.Reads("record")
	for _, c := range reads {
		if !slices.Contains(columns, c) {
			return c, true
		}
	}
	return "", false
}

// recordEnv is the environment of record expressions: derived fields and
// state versions. A function, so there is no package variable to change.
func recordEnv() *expr.Env { return expr.MustEnv(expr.Record) }

// ParseProvenance parses a provenance class name; unspecified is refused.
func ParseProvenance(s string) (contractv1.Provenance, error) {
	v, ok := contractv1.Provenance_value[s]
	if !ok || contractv1.Provenance(v) == contractv1.Provenance_PROVENANCE_UNSPECIFIED {
		return 0, fmt.Errorf("%q, want PROVENANCE_TRUSTED, PROVENANCE_UNTRUSTED or PROVENANCE_INSTRUCTION_BEARING", s)
	}
	return contractv1.Provenance(v), nil
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
