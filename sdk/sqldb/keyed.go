package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrAmbiguousKey marks a key that matches more than one row, and so names
// no one record.
var ErrAmbiguousKey = errors.New("matches more than one row")

// KeyedTable is a table read one record at a time by a key column, on a
// read-only connection: an evidence source, or the record a state check
// reads. It is safe for concurrent use.
type KeyedTable struct {
	db      *sql.DB
	columns []string
	// read selects the columns of the rows with a key; probe one key.
	read, probe string
}

// OpenKeyedTable opens dsn read-only and checks that table has the key
// column and every column. Errors name their key path under path:
// path.database, path.table, path.key and path.columns[i].
func OpenKeyedTable(ctx context.Context, path, dsn, table, key string, columns []string) (*KeyedTable, error) {
	db, err := OpenReadOnly(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s.database: %w", path, err)
	}
	if err := checkKeyedTable(ctx, db, path, dsn, table, key, columns); err != nil {
		_ = db.Close()
		return nil, err
	}
	// The stored values, not the driver's reading of the declared types.
	// Qualified, a column dropped or renamed since is an error, not its
	// own name read as a string.
	sel, err := Selects(ctx, db, table, columns)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%s.database: %s cannot be read: %w", path, Redact(dsn), err)
	}
	t, k := Ident(table), Column(table, key)
	return &KeyedTable{
		db:      db,
		columns: slices.Clone(columns),
		// LIMIT 2: a key that matches two rows names no one record.
		read:  fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? LIMIT 2", strings.Join(sel, ", "), t, k),
		probe: fmt.Sprintf("SELECT %s FROM %s LIMIT 1", k, t),
	}, nil
}

func checkKeyedTable(ctx context.Context, db *sql.DB, path, dsn, table, key string, columns []string) error {
	have, err := TableColumns(ctx, db, table)
	if err != nil {
		return fmt.Errorf("%s.database: %s cannot be read: %w", path, Redact(dsn), err)
	}
	if len(have) == 0 {
		return fmt.Errorf("%s.table: %s has no table %q", path, Redact(dsn), table)
	}
	var errs []error
	if !HasColumn(have, key) {
		errs = append(errs, fmt.Errorf("%s.key: table %q has no column %q", path, table, key))
	}
	for i, col := range columns {
		if !HasColumn(have, col) {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: table %q has no column %q", path, i, table, col))
		}
	}
	return errors.Join(errs...)
}

// Row reads the columns of the row whose key column equals key, as the
// driver returns them: nil when there is no such row, ErrAmbiguousKey when
// more than one matches.
func (t *KeyedTable) Row(ctx context.Context, key string) (map[string]any, error) {
	rows, err := t.db.QueryContext(ctx, t.read, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var record map[string]any
	for n := 0; rows.Next(); n++ {
		if n > 0 {
			return nil, fmt.Errorf("key %q %w", key, ErrAmbiguousKey)
		}
		dest := make([]any, len(t.columns))
		ptrs := make([]any, len(dest))
		for i := range dest {
			ptrs[i] = &dest[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		record = make(map[string]any, len(dest))
		for i, col := range t.columns {
			record[col] = dest[i]
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return record, nil
}

// Check selects one key of the table; an empty table is readable.
func (t *KeyedTable) Check(ctx context.Context) error {
	var key any
	if err := t.db.QueryRowContext(ctx, t.probe).Scan(&key); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return nil
}

// Columns are the columns a row holds.
func (t *KeyedTable) Columns() []string { return t.columns }

// Close closes the database.
func (t *KeyedTable) Close() error { return t.db.Close() }
