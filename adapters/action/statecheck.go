package action

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// StateCheck reads a record's state version now, from the source's
// system of record opened read-only. It is safe for concurrent use.
type StateCheck struct {
	db      *sql.DB
	columns []string
	version *expr.Program
	// read selects the declared columns of the rows with a key; probe
	// one key.
	read, probe string
}

// openStateCheck opens the check's database read-only and checks that
// the table has the key and every column; errors name their key path
// under path.
func openStateCheck(ctx context.Context, path string, c *compiledCheck) (*StateCheck, error) {
	cfg := c.sql
	p := path + ".sql"
	db, err := sqldb.OpenReadOnly(cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("%s.database: %w", p, err)
	}
	if err := checkSourceTable(ctx, db, p, cfg); err != nil {
		_ = db.Close()
		return nil, err
	}
	sel := make([]string, len(cfg.Columns))
	for i, col := range cfg.Columns {
		// The no-op unary + hands back the stored value, as the evidence
		// adapter reads it, whatever the column's declared type.
		sel[i] = "+" + sqldb.Ident(col)
	}
	return &StateCheck{
		db:      db,
		columns: slices.Clone(cfg.Columns),
		version: c.version,
		// LIMIT 2: a key that matches two rows names no one record.
		read: fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? LIMIT 2", strings.Join(sel, ", "),
			sqldb.Ident(cfg.Table), sqldb.Ident(cfg.Key)),
		probe: fmt.Sprintf("SELECT %s FROM %s LIMIT 1", sqldb.Ident(cfg.Key), sqldb.Ident(cfg.Table)),
	}, nil
}

func checkSourceTable(ctx context.Context, db *sql.DB, path string, cfg *SQLStateCheck) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, cfg.Table)
	if err != nil {
		return fmt.Errorf("%s.database: %s cannot be read: %w", path, cfg.Database, err)
	}
	var have []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return fmt.Errorf("%s.database: %s cannot be read: %w", path, cfg.Database, err)
		}
		have = append(have, name)
	}
	_ = rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s.database: %s cannot be read: %w", path, cfg.Database, err)
	}
	if len(have) == 0 {
		return fmt.Errorf("%s.table: %s has no table %q", path, cfg.Database, cfg.Table)
	}
	var errs []error
	if !slices.Contains(have, cfg.Key) {
		errs = append(errs, fmt.Errorf("%s.key: table %q has no column %q", path, cfg.Table, cfg.Key))
	}
	for i, col := range cfg.Columns {
		if !slices.Contains(have, col) {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: table %q has no column %q", path, i, cfg.Table, col))
		}
	}
	return errors.Join(errs...)
}

// Version returns the state version of the record with key; found is
// false when there is none. Any failure to read or compute it is an
// error: a check never passes by default.
func (s *StateCheck) Version(ctx context.Context, key string) (version string, found bool, err error) {
	rows, err := s.db.QueryContext(ctx, s.read, key)
	if err != nil {
		return "", false, err
	}
	defer func() { _ = rows.Close() }()
	var record map[string]any
	for n := 0; rows.Next(); n++ {
		if n > 0 {
			return "", false, fmt.Errorf("key %q matches more than one row", key)
		}
		dest := make([]any, len(s.columns))
		ptrs := make([]any, len(dest))
		for i := range dest {
			ptrs[i] = &dest[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", false, err
		}
		record = make(map[string]any, len(dest))
		for i, col := range s.columns {
			record[col] = plainSQL(dest[i])
		}
	}
	if err := rows.Err(); err != nil {
		return "", false, err
	}
	if record == nil {
		return "", false, nil
	}
	v, err := s.version.Value(expr.Vars{"record": record})
	if err != nil {
		return "", false, fmt.Errorf("state version %q does not evaluate on this record", s.version)
	}
	version, ok := versionText(v)
	if !ok {
		return "", false, fmt.Errorf("state version %q yields an empty value or a %T", s.version, v)
	}
	return version, true, nil
}

// maxExactInt is the largest integer a float64 holds exactly.
const maxExactInt = 1 << 53

// versionText is a state version's text, as the evidence adapter writes
// it into receipts and the kernel binds it: strings as they are, integers
// (also integral doubles) in decimal, bools as true or false.
func versionText(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, t != ""
	case int64:
		return strconv.FormatInt(t, 10), true
	case uint64:
		return strconv.FormatUint(t, 10), true
	case float64:
		if t == math.Trunc(t) && math.Abs(t) <= maxExactInt {
			return strconv.FormatInt(int64(t), 10), true
		}
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}

// Check reads the table.
func (s *StateCheck) Check(ctx context.Context) error { return probe(ctx, s.db, s.probe) }

// Close closes the database.
func (s *StateCheck) Close() error { return s.db.Close() }
