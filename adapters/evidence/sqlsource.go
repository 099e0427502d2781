package evidence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// SQLConnector reads rows of one table. It is safe for concurrent use.
type SQLConnector struct {
	db      *sql.DB
	columns []string
	shape   shape
	// read selects the declared columns of the rows with a key; probe
	// selects one key.
	read, probe string
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
	db, err := sqldb.OpenReadOnly(cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("%s.database: %w", path, err)
	}
	if err := checkTable(ctx, db, path, cfg); err != nil {
		_ = db.Close()
		return nil, err
	}
	// The stored values, not the driver's reading of the declared types.
	// Qualified, a column dropped after the start is an error, not its
	// own name.
	sel, err := sqldb.Selects(ctx, db, cfg.Table, cfg.Columns)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%s.database: %s cannot be read: %w", path, sqldb.Redact(cfg.Database), err)
	}
	table, key := sqldb.Ident(cfg.Table), sqldb.Column(cfg.Table, cfg.Key)
	return &SQLConnector{
		db:      db,
		columns: slices.Clone(cfg.Columns),
		shape:   shape{subject: cfg.Subject, stateVersion: version},
		// LIMIT 2: a key that matches two rows names no one record.
		read:  fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? LIMIT 2", strings.Join(sel, ", "), table, key),
		probe: fmt.Sprintf("SELECT %s FROM %s LIMIT 1", key, table),
	}, nil
}

func checkTable(ctx context.Context, db *sql.DB, path string, cfg SQLSource) error {
	have, err := sqldb.TableColumns(ctx, db, cfg.Table)
	if err != nil {
		return fmt.Errorf("%s.database: %s cannot be read: %w", path, sqldb.Redact(cfg.Database), err)
	}
	if len(have) == 0 {
		return fmt.Errorf("%s.table: %s has no table %q", path, sqldb.Redact(cfg.Database), cfg.Table)
	}
	var errs []error
	if !sqldb.HasColumn(have, cfg.Key) {
		errs = append(errs, fmt.Errorf("%s.key: table %q has no column %q", path, cfg.Table, cfg.Key))
	}
	for i, c := range cfg.Columns {
		if !sqldb.HasColumn(have, c) {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: table %q has no column %q", path, i, cfg.Table, c))
		}
	}
	return errors.Join(errs...)
}

// Read reads the row whose key column equals key.
func (s *SQLConnector) Read(ctx context.Context, key string) (Record, error) {
	rows, err := s.db.QueryContext(ctx, s.read, key)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrSourceUnavailable, err)
	}
	defer func() { _ = rows.Close() }()
	var values map[string]any
	for n := 0; rows.Next(); n++ {
		if n > 0 {
			return Record{}, fmt.Errorf("key %q matches more than one row", key)
		}
		dest := make([]any, len(s.columns))
		ptrs := make([]any, len(dest))
		for i := range dest {
			ptrs[i] = &dest[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return Record{}, fmt.Errorf("%w: %v", ErrSourceUnavailable, err)
		}
		values = make(map[string]any, len(dest))
		for i, c := range s.columns {
			values[c] = dest[i]
		}
	}
	if err := rows.Err(); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrSourceUnavailable, err)
	}
	if values == nil {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return s.shape.record(values)
}

// Check selects one key of the table.
func (s *SQLConnector) Check(ctx context.Context) error {
	var key any
	err := s.db.QueryRowContext(ctx, s.probe).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // an empty table is readable
	}
	return err
}

// Columns are the declared columns.
func (s *SQLConnector) Columns() []string { return s.columns }

// Close closes the database.
func (s *SQLConnector) Close() error { return s.db.Close() }
