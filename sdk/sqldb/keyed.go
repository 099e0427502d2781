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
	// q runs read prepared once.
	q *Prepared
	// read selects the columns of the rows with a key; probe selects one
	// key. many selects the key and the columns of the rows whose key is
	// one of a list, which it ends.
	read, probe, many string
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
	kt := &KeyedTable{
		db:      db,
		columns: slices.Clone(columns),
		// LIMIT 2: a key that matches two rows names no one record.
		read:  fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? LIMIT 2", strings.Join(sel, ", "), t, k),
		probe: fmt.Sprintf("SELECT %s FROM %s LIMIT 1", k, t),
		many:  fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s IN (", k, strings.Join(sel, ", "), t, k),
	}
	kt.q = NewPrepared(db)
	return kt, nil
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
	rows, err := t.q.QueryContext(ctx, t.read, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var record map[string]any
	for n := 0; rows.Next(); n++ {
		if n > 0 {
			return nil, fmt.Errorf("key %q %w", key, ErrAmbiguousKey)
		}
		if _, record, err = t.scan(rows, false); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return record, nil
}

// Rows reads the rows of many keys, a statement for every [MaxKeys] of them,
// and returns the columns of each key that matched exactly one row whose
// key, as text, is the key asked for. A key it does not return may match
// no row, more than one, or a row whose key reads differently (an
// integer key asked for as "007"): [KeyedTable.Row] tells which.
func (t *KeyedTable) Rows(ctx context.Context, keys []string) (map[string]map[string]any, error) {
	found := make(map[string]map[string]any, len(keys))
	twice := map[string]bool{}
	asked := make(map[string]bool, len(keys))
	for _, k := range keys {
		asked[k] = true
	}
	for len(keys) > 0 {
		n := min(len(keys), MaxKeys)
		args := make([]any, n)
		for i, k := range keys[:n] {
			args[i] = k
		}
		if err := t.rows(ctx, t.many+Placeholders(n)+")", args, asked, found, twice); err != nil {
			return nil, err
		}
		keys = keys[n:]
	}
	for k := range twice {
		delete(found, k)
	}
	return found, nil
}

func (t *KeyedTable) rows(ctx context.Context, query string, args []any, asked map[string]bool, found map[string]map[string]any, twice map[string]bool) error {
	rows, err := t.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		key, record, err := t.scan(rows, true)
		if err != nil {
			return err
		}
		if !asked[key] {
			continue // matched a key that reads differently: Row tells
		}
		if _, ok := found[key]; ok {
			twice[key] = true
		}
		found[key] = record
	}
	return rows.Err()
}

// scan reads one row's columns, after its key when keyed.
func (t *KeyedTable) scan(rows *sql.Rows, keyed bool) (string, map[string]any, error) {
	dest := make([]any, len(t.columns)+1)
	ptrs := make([]any, len(dest))
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	if !keyed {
		ptrs = ptrs[1:]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", nil, err
	}
	key, _ := Text(dest[0])
	record := make(map[string]any, len(t.columns))
	for i, col := range t.columns {
		record[col] = dest[i+1]
	}
	return key, record, nil
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
func (t *KeyedTable) Close() error { return errors.Join(t.q.Close(), t.db.Close()) }
