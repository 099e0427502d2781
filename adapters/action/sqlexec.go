package action

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Databases opens each read-write database once per file or URL, so that
// the adapter's key table and the sql executors naming the same database
// share one handle, and so one transaction. It is safe for concurrent use.
type Databases struct {
	durability sqldb.Durability
	mu         sync.Mutex
	byFile     map[string]*sql.DB
}

// NewDatabases returns an empty set whose databases commit at durability
// d; close it when done.
func NewDatabases(d sqldb.Durability) *Databases {
	return &Databases{durability: d, byFile: map[string]*sql.DB{}}
}

// Open opens dsn read-write (sqldb.OpenDurable), or returns the handle
// already open on the same SQLite file or PostgreSQL URL.
func (d *Databases) Open(dsn string) (*sql.DB, error) {
	name := dsn
	if !sqldb.IsPostgres(dsn) {
		file, err := filepath.Abs(strings.TrimPrefix(dsn, "sqlite:"))
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", sqldb.Redact(dsn), err)
		}
		name = file
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if db, ok := d.byFile[name]; ok {
		return db, nil
	}
	db, err := sqldb.OpenDurable(dsn, d.durability)
	if err != nil {
		return nil, err
	}
	d.byFile[name] = db
	return db, nil
}

// Close closes every database opened.
func (d *Databases) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for file, db := range d.byFile {
		errs = append(errs, db.Close())
		delete(d.byFile, file)
	}
	return errors.Join(errs...)
}

// sqlExecutor inserts one row per effect. The key column is UNIQUE in the
// table (checked when opened), so the table refuses a second row for a
// key whatever this adapter remembers.
type sqlExecutor struct {
	db *sql.DB
	// q runs insert and lookup prepared once.
	q *sqldb.Prepared
	// columns are the mapped columns, sorted; mapped their expressions.
	columns   []string
	mapped    map[string]*expr.Program
	recordRef *expr.Program
	// insert writes a row (key first, then columns); lookup reads the
	// columns of the row with a key; probe reads one key.
	insert, lookup, probe string
}

var _ Executor = (*sqlExecutor)(nil)

func openSQLExecutor(ctx context.Context, path string, c *compiled, dbs *Databases) (*sqlExecutor, error) {
	cfg := c.sql
	db, err := dbs.Open(cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("%s.database: %w", path, err)
	}
	columns := sortedKeys(cfg.Columns)
	if err := checkTargetTable(ctx, db, path, cfg, columns); err != nil {
		return nil, err
	}
	quoted := make([]string, 0, len(columns)+1)
	quoted = append(quoted, sqldb.Ident(cfg.KeyColumn))
	for _, col := range columns {
		quoted = append(quoted, sqldb.Ident(col))
	}
	// The stored values, not the driver's reading of the declared types.
	read, err := sqldb.Selects(ctx, db, cfg.Table, columns)
	if err != nil {
		return nil, fmt.Errorf("%s.database: %s cannot be read: %w", path, sqldb.Redact(cfg.Database), err)
	}
	table := sqldb.Ident(cfg.Table)
	return &sqlExecutor{
		db:        db,
		q:         sqldb.NewPrepared(db),
		columns:   columns,
		mapped:    c.mapped,
		recordRef: c.recordRef,
		// DO NOTHING rather than an error for a row a unique key refuses:
		// on PostgreSQL an error would end the transaction the key's row
		// shares, before the row could be read.
		insert: fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT DO NOTHING", table, strings.Join(quoted, ", "),
			sqldb.Placeholders(len(columns)+1)),
		// LIMIT 2: the key is unique, so a second row would be a table
		// that changed under the adapter.
		lookup: fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? LIMIT 2", strings.Join(read, ", "), table, sqldb.Ident(cfg.KeyColumn)),
		probe:  fmt.Sprintf("SELECT %s FROM %s LIMIT 1", sqldb.Ident(cfg.KeyColumn), table),
	}, nil
}

// checkTargetTable checks that the table has every column written, that
// every NOT NULL column the database does not fill is written, and that
// the key column is UNIQUE on its own.
func checkTargetTable(ctx context.Context, db *sql.DB, path string, cfg *SQLExecutor, columns []string) error {
	unreadable := func(err error) error {
		return fmt.Errorf("%s.database: %s cannot be read: %w", path, sqldb.Redact(cfg.Database), err)
	}
	have, err := targetColumns(ctx, db, cfg.Table)
	if err != nil {
		return unreadable(err)
	}
	if len(have) == 0 {
		return fmt.Errorf("%s.table: %s has no table %q", path, sqldb.Redact(cfg.Database), cfg.Table)
	}
	var errs []error
	if _, ok := have[cfg.KeyColumn]; !ok {
		errs = append(errs, fmt.Errorf("%s.key_column: table %q has no column %q", path, cfg.Table, cfg.KeyColumn))
	}
	for _, col := range columns {
		if _, ok := have[col]; !ok {
			errs = append(errs, fmt.Errorf("%s.columns.%s: table %q has no column %q", path, col, cfg.Table, col))
		}
	}
	var pkColumns []string
	for _, name := range sortedKeys(have) {
		c := have[name]
		if c.pk {
			pkColumns = append(pkColumns, name)
		}
		if c.notNull && !c.filled && name != cfg.KeyColumn && !slices.Contains(columns, name) {
			errs = append(errs, fmt.Errorf("%s.columns: column %q of table %q is NOT NULL without a default and is not mapped", path, name, cfg.Table))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	unique := len(pkColumns) == 1 && pkColumns[0] == cfg.KeyColumn
	if !unique {
		if unique, err = uniqueAlone(ctx, db, cfg.Table, cfg.KeyColumn); err != nil {
			return unreadable(err)
		}
	}
	if !unique {
		return fmt.Errorf("%s.key_column: column %q of table %q is not UNIQUE on its own: the table could hold two effects for one key", path, cfg.KeyColumn, cfg.Table)
	}
	return nil
}

// targetColumn is what the checks need of a column of a target table.
type targetColumn struct {
	notNull bool
	// filled: the database fills the column when a row leaves it out (a
	// default, an identity, SQLite's row id).
	filled bool
	// pk: the column is part of the primary key.
	pk bool
}

// targetColumns describes the columns of table; a missing table has none.
func targetColumns(ctx context.Context, db *sql.DB, table string) (map[string]targetColumn, error) {
	if sqldb.IsPostgresDB(db) {
		return postgresColumns(ctx, db, table)
	}
	return sqliteColumns(ctx, db, table)
}

// uniqueAlone reports whether a full (not partial) unique index of table
// covers exactly column.
func uniqueAlone(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	if sqldb.IsPostgresDB(db) {
		return postgresUniqueAlone(ctx, db, table, column)
	}
	return sqliteUniqueAlone(ctx, db, table, column)
}

func sqliteColumns(ctx context.Context, db *sql.DB, table string) (map[string]targetColumn, error) {
	type info struct {
		targetColumn
		integer bool
	}
	var infos []info
	var names []string
	err := queryRows(ctx, db, `SELECT name, "notnull", dflt_value IS NOT NULL, pk > 0, upper(type) = 'INTEGER' FROM pragma_table_info(?)`,
		func(r *sql.Rows) error {
			var (
				name string
				c    info
			)
			if err := r.Scan(&name, &c.notNull, &c.filled, &c.pk, &c.integer); err != nil {
				return err
			}
			names, infos = append(names, name), append(infos, c)
			return nil
		}, table)
	if err != nil {
		return nil, err
	}
	pks := 0
	for _, c := range infos {
		if c.pk {
			pks++
		}
	}
	out := make(map[string]targetColumn, len(infos))
	for i, c := range infos {
		// A lone INTEGER PRIMARY KEY is the row id, which SQLite assigns.
		if c.pk && pks == 1 && c.integer {
			c.filled = true
		}
		out[names[i]] = c.targetColumn
	}
	return out, nil
}

func sqliteUniqueAlone(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	var indexes []string
	err := queryRows(ctx, db, `SELECT name FROM pragma_index_list(?) WHERE "unique" = 1 AND partial = 0`, func(r *sql.Rows) error {
		var name string
		err := r.Scan(&name)
		indexes = append(indexes, name)
		return err
	}, table)
	if err != nil {
		return false, err
	}
	for _, idx := range indexes {
		var cols []sql.NullString
		err := queryRows(ctx, db, `SELECT name FROM pragma_index_info(?)`, func(r *sql.Rows) error {
			var c sql.NullString
			err := r.Scan(&c)
			cols = append(cols, c)
			return err
		}, idx)
		if err != nil {
			return false, err
		}
		if len(cols) == 1 && cols[0].Valid && cols[0].String == column {
			return true, nil
		}
	}
	return false, nil
}

// postgresColumns reads pg_catalog: the table is found on the search
// path, as the executor's unqualified statements find it.
func postgresColumns(ctx context.Context, db *sql.DB, table string) (map[string]targetColumn, error) {
	out := map[string]targetColumn{}
	err := queryRows(ctx, db, `SELECT a.attname, a.attnotnull, a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '',
			EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey))
		FROM pg_attribute a
		WHERE a.attrelid = to_regclass(quote_ident(?)) AND a.attnum > 0 AND NOT a.attisdropped`,
		func(r *sql.Rows) error {
			var (
				name string
				c    targetColumn
			)
			if err := r.Scan(&name, &c.notNull, &c.filled, &c.pk); err != nil {
				return err
			}
			out[name] = c
			return nil
		}, table)
	return out, err
}

// postgresUniqueAlone looks for a unique index whose one key column is
// column: not partial, not on an expression, checked at once (not
// deferred to commit).
func postgresUniqueAlone(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	var unique bool
	err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = to_regclass(quote_ident(?)) AND i.indisunique AND i.indimmediate
			AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = ?)`,
		table, column).Scan(&unique)
	return unique, err
}

// queryRows runs query and calls each for every row.
func queryRows(ctx context.Context, db *sql.DB, query string, each func(*sql.Rows) error, args ...any) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (x *sqlExecutor) Kind() string { return "sql" }

// Check reads the target table.
func (x *sqlExecutor) Check(ctx context.Context) error { return probe(ctx, x.db, x.probe) }

// Prepare evaluates every column's expression.
func (x *sqlExecutor) Prepare(in Input) (Effect, error) {
	values := make([]any, len(x.columns))
	for i, col := range x.columns {
		v, err := x.mapped[col].Value(in.vars())
		if err != nil {
			return nil, fmt.Errorf("%w (columns.%s: %v)", ErrArguments, col, err)
		}
		values[i] = v
	}
	return &sqlEffect{x: x, in: in, values: values}, nil
}

type sqlEffect struct {
	x      *sqlExecutor
	in     Input
	values []any
}

var _ txEffect = (*sqlEffect)(nil)

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (e *sqlEffect) DB() *sql.DB { return e.x.db }

func (e *sqlEffect) Do(ctx context.Context) (string, error) { return e.write(ctx, e.x.q) }

func (e *sqlEffect) DoTx(ctx context.Context, tx *sql.Tx) (string, error) {
	return e.write(ctx, e.x.q.In(tx))
}

// Resolve looks the key's row up: missing, the effect never happened and
// is written now; present, it is this effect if it holds exactly the
// values this call maps to, and otherwise in doubt.
func (e *sqlEffect) Resolve(ctx context.Context) (string, error) {
	row, found, err := e.read(ctx, e.x.q)
	if err != nil {
		return "", err
	}
	if !found {
		return e.Do(ctx)
	}
	return e.match(row)
}

func (e *sqlEffect) write(ctx context.Context, q querier) (string, error) {
	res, err := q.ExecContext(ctx, e.x.insert, append([]any{e.in.Key}, e.values...)...)
	if sqldb.IsRefused(err) {
		return "", fmt.Errorf("%w: %w: %w", ErrTargetRefused, errNothingDone, err)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w: %w", ErrTargetUnavailable, errNothingDone, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInDoubt, err)
	}
	if n == 0 {
		// A unique key refused the row: the table holds a row for the key
		// already (committed: a writer with the same key waits for the
		// other to commit), and that row decides; or another unique
		// column refused this one.
		row, found, err := e.read(ctx, q)
		switch {
		case err != nil:
			return "", err
		case !found:
			return "", fmt.Errorf("%w: %w: another unique column of the table refuses the row", ErrTargetRefused, errNothingDone)
		}
		return e.match(row)
	}
	row := make(map[string]any, len(e.values))
	for i, col := range e.x.columns {
		row[col] = e.values[i]
	}
	return recordRef(e.x.recordRef, e.in, row)
}

func (e *sqlEffect) read(ctx context.Context, q querier) (map[string]any, bool, error) {
	rows, err := q.QueryContext(ctx, e.x.lookup, e.in.Key)
	if err != nil {
		return nil, false, fmt.Errorf("%w: look up key: %w", ErrTargetUnavailable, err)
	}
	defer func() { _ = rows.Close() }()
	var row map[string]any
	for n := 0; rows.Next(); n++ {
		if n > 0 {
			return nil, false, fmt.Errorf("%w: the target holds two rows for the key", ErrInDoubt)
		}
		dest := make([]any, len(e.x.columns))
		ptrs := make([]any, len(dest))
		for i := range dest {
			ptrs[i] = &dest[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, false, fmt.Errorf("%w: look up key: %w", ErrTargetUnavailable, err)
		}
		row = make(map[string]any, len(dest))
		for i, col := range e.x.columns {
			row[col] = plainSQL(dest[i])
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("%w: look up key: %w", ErrTargetUnavailable, err)
	}
	return row, row != nil, nil
}

// match accepts a row holding exactly the values this call maps to: the
// same effect, written by an earlier attempt.
func (e *sqlEffect) match(row map[string]any) (string, error) {
	for i, col := range e.x.columns {
		if !sameSQLValue(e.values[i], row[col]) {
			return "", fmt.Errorf("%w: the target's row for the key differs in column %s", ErrInDoubt, col)
		}
	}
	return recordRef(e.x.recordRef, e.in, row)
}

// plainSQL is a stored value as expressions take it.
func plainSQL(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

// sameSQLValue compares a mapped value with the stored one: a bool as 0
// or 1 (as SQLite stores it; PostgreSQL's boolean reads back as a bool),
// numbers by value.
func sameSQLValue(want, got any) bool {
	norm := func(v any) any {
		switch t := v.(type) {
		case bool:
			if t {
				return int64(1)
			}
			return int64(0)
		case uint64:
			if t <= math.MaxInt64 {
				return int64(t)
			}
		case []byte:
			return string(t)
		}
		return v
	}
	w, g := norm(want), norm(got)
	if w == g {
		return true
	}
	// An INTEGER column stores an integral REAL as an integer, a REAL
	// column an integer as a REAL: compare an int with a float by value.
	wi, wInt := w.(int64)
	gi, gInt := g.(int64)
	wf, wFloat := w.(float64)
	gf, gFloat := g.(float64)
	switch {
	case wInt && gFloat:
		return float64(wi) == gf && gf == math.Trunc(gf) && int64(gf) == wi
	case wFloat && gInt:
		return wf == float64(gi) && wf == math.Trunc(wf) && int64(wf) == gi
	}
	return false
}
