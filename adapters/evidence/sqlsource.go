package evidence

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// SQLConnector reads rows of one table. It is safe for concurrent use.
type SQLConnector struct {
	table *sqldb.KeyedTable
	shape shape
}

var _ Connector = (*SQLConnector)(nil)

// OpenSQL opens the source's database read-only and checks that the table
// has the key and every declared column; errors name their key path under
// path (e.g. "sources.records_db.sql").
func OpenSQL(ctx context.Context, path string, cfg SQLSource) (*SQLConnector, error) {
	if errs := cfg.validate(path); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	version, err := compileStateVersion(cfg.StateVersion, cfg.Columns)
	if err != nil {
		return nil, fmt.Errorf("%s.state_version: %w", path, err)
	}
	table, err := sqldb.OpenKeyedTable(ctx, path, cfg.Database, cfg.Table, cfg.Key, cfg.Columns)
	if err != nil {
		return nil, err
	}
	return &SQLConnector{table: table, shape: shape{subject: cfg.Subject, stateVersion: version}}, nil
}

// Read reads the row whose key column equals key.
func (s *SQLConnector) Read(ctx context.Context, key string) (Record, error) {
	values, err := s.table.Row(ctx, key)
	switch {
	case errors.Is(err, sqldb.ErrAmbiguousKey):
		return Record{}, err
	case err != nil:
		return Record{}, fmt.Errorf("%w: %v", ErrSourceUnavailable, err)
	case values == nil:
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return s.shape.record(values)
}

// ReadMany reads the rows of many keys in a few statements and returns
// the records it could read whole. A key it leaves out may name no row,
// several, or a row the state version does not evaluate on: [Read] tells
// which, with its error.
func (s *SQLConnector) ReadMany(ctx context.Context, keys []string) (map[string]Record, error) {
	rows, err := s.table.Rows(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSourceUnavailable, err)
	}
	out := make(map[string]Record, len(rows))
	for key, values := range rows {
		if r, err := s.shape.record(values); err == nil {
			out[key] = r
		}
	}
	return out, nil
}

// Check selects one key of the table.
func (s *SQLConnector) Check(ctx context.Context) error { return s.table.Check(ctx) }

// Columns are the declared columns.
func (s *SQLConnector) Columns() []string { return s.table.Columns() }

// Close closes the database.
func (s *SQLConnector) Close() error { return s.table.Close() }
