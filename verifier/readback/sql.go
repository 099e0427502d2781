package readback

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// sqlConn reads rows of one table by key, read-only.
type sqlConn struct {
	path  string // key path of the declaration, for errors at open
	spec  SQL
	query string
	db    *sql.DB
	// q runs the query prepared once.
	q *sqldb.Prepared
}

var _ connector = (*sqlConn)(nil)

// open opens the database read-only and checks that the table and every
// declared column exist, so that a misnamed one fails at start, naming its
// key path, rather than at the first verification.
func (c *sqlConn) open(ctx context.Context, _ string) error {
	db, err := sqldb.OpenReadOnly(c.spec.Database)
	if err != nil {
		return fmt.Errorf("%s.database: %w", c.path, err)
	}
	if err := c.checkSchema(ctx, db); err != nil {
		_ = db.Close()
		return err
	}
	cols := make([]string, len(c.spec.Columns))
	for i, col := range c.spec.Columns {
		cols[i] = sqldb.Column(c.spec.Table, col)
	}
	if sqldb.IsPostgresDB(db) {
		// PostgreSQL's dates, times, numerics and json are read as their
		// text, so that checks compare plain values.
		if cols, err = sqldb.Selects(ctx, db, c.spec.Table, c.spec.Columns); err != nil {
			_ = db.Close()
			return fmt.Errorf("%s.database: read the schema of %s: %w", c.path, sqldb.Redact(c.spec.Database), err)
		}
	}
	c.db, c.q = db, sqldb.NewPrepared(db)
	c.query = selectByKey(c.spec, cols)
	return nil
}

func (c *sqlConn) checkSchema(ctx context.Context, db *sql.DB) error {
	have, err := sqldb.TableColumns(ctx, db, c.spec.Table)
	if err != nil {
		return fmt.Errorf("%s.database: read the schema of %s: %w", c.path, sqldb.Redact(c.spec.Database), err)
	}
	if len(have) == 0 {
		return fmt.Errorf("%s.table: no table %q in %s", c.path, c.spec.Table, sqldb.Redact(c.spec.Database))
	}
	var errs []error
	if !sqldb.HasColumn(have, c.spec.KeyColumn) {
		errs = append(errs, fmt.Errorf("%s.key_column: no column %q in table %q", c.path, c.spec.KeyColumn, c.spec.Table))
	}
	for i, col := range c.spec.Columns {
		if !sqldb.HasColumn(have, col) {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: no column %q in table %q", c.path, i, col, c.spec.Table))
		}
	}
	return errors.Join(errs...)
}

// selectByKey is the one query of a declaration: its columns (cols, the
// expressions selecting them) of the rows under a key, in a stable order,
// at most one row beyond MaxRows. Every column is qualified by its table
// ([sqldb.Column]), so a column dropped after the start fails the read
// instead of reading as its own name.
func selectByKey(s SQL, cols []string) string {
	list := strings.Join(cols, ", ")
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? ORDER BY %s LIMIT %d",
		list, sqldb.Ident(s.Table), sqldb.Column(s.Table, s.KeyColumn), list, MaxRows+1)
}

func (c *sqlConn) read(ctx context.Context, in Input) (Reading, error) {
	rows, err := c.q.QueryContext(ctx, c.query, in.Key)
	if err != nil {
		return Reading{}, fmt.Errorf("%w: %s: %w", ErrUnreadable, c.spec.Table, err)
	}
	defer rows.Close()
	var out Reading
	for rows.Next() {
		vals := make([]any, len(c.spec.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return Reading{}, fmt.Errorf("%w: %s: %w", ErrUnreadable, c.spec.Table, err)
		}
		row := make(map[string]any, len(vals))
		for i, col := range c.spec.Columns {
			row[col] = vals[i]
		}
		out.Rows = append(out.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return Reading{}, fmt.Errorf("%w: %s: %w", ErrUnreadable, c.spec.Table, err)
	}
	if len(out.Rows) > MaxRows {
		out.Rows = out.Rows[:MaxRows]
		out.Findings = append(out.Findings, FindingRowsOverLimit)
	}
	return out, nil
}

func (c *sqlConn) close() error {
	if c.db == nil {
		return nil
	}
	return errors.Join(c.q.Close(), c.db.Close())
}
