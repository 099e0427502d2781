package evidence

import (
	"context"
	"errors"
	"fmt"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Connector reads records of one declared source. Implementations: the
// sql connector ([OpenSQL]) and the mcp connector ([OpenMCP]).
type Connector interface {
	// Read returns the record with key: every declared column, and only
	// those. A missing record is [ErrNotFound]; a source that cannot be
	// read is [ErrSourceUnavailable].
	Read(ctx context.Context, key string) (Record, error)
	// Check is a cheap probe that the source is readable now.
	Check(ctx context.Context) error
	// Columns are the declared columns, in configuration order.
	Columns() []string
	// Close releases the connection.
	Close() error
}

// manyReader is a connector that reads many records at once, as the
// watcher reads every record it watches on each pass (see
// [SQLConnector.ReadMany]).
type manyReader interface {
	ReadMany(ctx context.Context, keys []string) (map[string]Record, error)
}

// Record is one record as a connector read it.
type Record struct {
	// Values maps every declared column to its value: nil, bool, int64,
	// uint64, float64 or string; []byte for an SQL BLOB; []any and
	// map[string]any for nested JSON.
	Values map[string]any
	// Subject is the data subject the record belongs to ("" when the
	// subject column is NULL).
	Subject string
	// StateVersion is the record's state version, computed by the source's
	// declared expression.
	StateVersion string
}

// Source is one declared source: its connector and the provenance class
// the deployment assigns it.
type Source struct {
	Connector  Connector
	Provenance contractv1.Provenance
}

// shape is what every connector computes from the values it read: the
// subject and the state version.
type shape struct {
	subject      string
	stateVersion *expr.Program
}

func (s shape) record(values map[string]any) (Record, error) {
	subject := ""
	if v := values[s.subject]; v != nil {
		t, ok := sqldb.Text(v)
		if !ok {
			return Record{}, fmt.Errorf("subject column %q holds a %T, not text or a number", s.subject, v)
		}
		subject = t
	}
	// Evaluation errors can quote values (a failed conversion does): only
	// the expression is named.
	v, err := s.stateVersion.Value(expr.Vars{"record": values})
	if err != nil {
		return Record{}, fmt.Errorf("state version %q does not evaluate on this record", s.stateVersion)
	}
	version, ok := sqldb.Text(v)
	if !ok || version == "" {
		return Record{}, fmt.Errorf("state version %q yields an empty value or a %T, want a non-empty string or an integer", s.stateVersion, v)
	}
	return Record{Values: values, Subject: subject, StateVersion: version}, nil
}

// OpenSources opens every declared source (read-only) and checks what
// only the source can tell: that the database opens, the table exists
// and has every declared column, that the MCP server answers. Every
// problem is reported at once, naming its key path. On error nothing is
// left open.
func OpenSources(ctx context.Context, cfgs map[string]SourceConfig) (map[string]Source, error) {
	sources := make(map[string]Source, len(cfgs))
	var errs []error
	for _, name := range sortedNames(cfgs) {
		sc := cfgs[name]
		path := "sources." + name
		prov, err := ParseProvenance(sc.Provenance)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.provenance: %w", path, err))
			continue
		}
		var conn Connector
		switch {
		case sc.SQL != nil && sc.MCP == nil:
			conn, err = OpenSQL(ctx, path+".sql", *sc.SQL)
		case sc.MCP != nil && sc.SQL == nil:
			conn, err = OpenMCP(ctx, path+".mcp", *sc.MCP)
		default:
			err = fmt.Errorf("%s: one connector is required: sql or mcp", path)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sources[name] = Source{Connector: conn, Provenance: prov}
	}
	if err := errors.Join(errs...); err != nil {
		CloseSources(sources)
		return nil, err
	}
	return sources, nil
}

// CloseSources closes every source's connector.
func CloseSources(sources map[string]Source) {
	for _, s := range sources {
		_ = s.Connector.Close()
	}
}
