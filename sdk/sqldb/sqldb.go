package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// busyTimeoutMillis bounds how long a statement waits for another
// connection's lock: a writer commits while readers read.
const busyTimeoutMillis = 5000

// ErrDSN marks a connection string that names no supported database.
var ErrDSN = errors.New("unsupported database")

// path returns the SQLite file a connection string names.
func path(dsn string) (string, error) {
	p := strings.TrimPrefix(dsn, "sqlite:")
	switch {
	case p == "":
		return "", fmt.Errorf("%w: empty connection string", ErrDSN)
	case strings.Contains(dsn, "://"):
		return "", fmt.Errorf("%w: %q (want an SQLite file path, sqlite:PATH or a postgres:// URL)", ErrDSN, Redact(dsn))
	}
	return p, nil
}

// MaxKeys bounds the values one statement lists in an IN (...) clause: a
// few statements for many keys, each well within every database's limit
// on bound parameters.
const MaxKeys = 256

// Placeholders is n bound parameters, "?, ?, …", for an IN (...) list or
// a row of values.
func Placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return "?" + strings.Repeat(", ?", n-1)
}

func fileURI(p string) string { return "file:" + (&url.URL{Path: p}).EscapedPath() }

// Open opens a database read-write at full durability, creating an SQLite
// file if needed. WAL mode lets read-only readers (the verifier, the
// evidence adapter) read while a writer commits.
func Open(dsn string) (*sql.DB, error) { return OpenDurable(dsn, DurabilityFull) }

// OpenDurable is [Open] with commits at durability d.
func OpenDurable(dsn string, d Durability) (*sql.DB, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	if IsPostgres(dsn) {
		return OpenPostgres(dsn, d.PostgresParams())
	}
	p, err := path(dsn)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=%s&_txlock=immediate",
		fileURI(p), busyTimeoutMillis, d.SQLitePragma()))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", p, err)
	}
	return db, nil
}

// OpenReadOnly opens an existing database read-only: an SQLite file is
// opened with mode=ro and every connection is query_only, so a reader
// cannot change what it reads even through a bug. It does not touch the
// file; a missing database is an error of each query.
func OpenReadOnly(dsn string) (*sql.DB, error) {
	if IsPostgres(dsn) {
		return OpenPostgres(dsn, map[string]string{"default_transaction_read_only": "on"})
	}
	p, err := path(dsn)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", fmt.Sprintf("%s?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)", fileURI(p), busyTimeoutMillis))
	if err != nil {
		return nil, fmt.Errorf("open database %s read-only: %w", p, err)
	}
	return db, nil
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// CheckIdent refuses a configured table or column name that is not a
// plain identifier.
func CheckIdent(name string) error {
	if !identRE.MatchString(name) {
		return fmt.Errorf("%q is not a plain SQL identifier (letters, digits, underscore)", name)
	}
	return nil
}

// Ident quotes a name CheckIdent accepted.
func Ident(name string) string { return `"` + name + `"` }

// Column is column of table, quoted and qualified by its table: use it for
// every column a query selects or compares. SQLite takes an unknown
// double-quoted name on its own for a string literal, so a column dropped
// or misnamed would read as its own name; qualified, it is an error.
func Column(table, column string) string { return Ident(table) + "." + Ident(column) }

// TableColumns lists the columns of table as the database names them; a
// table that does not exist has none.
func TableColumns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	query := `SELECT name FROM pragma_table_info(?)`
	if IsPostgresDB(db) {
		query = `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`
	}
	rows, err := db.QueryContext(ctx, query, table)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// HasColumn reports whether cols (from [TableColumns]) holds column,
// compared as SQLite compares names: ignoring ASCII case.
func HasColumn(cols []string, column string) bool {
	return slices.ContainsFunc(cols, func(c string) bool { return strings.EqualFold(c, column) })
}

// maxExactInt is the largest integer magnitude a double holds exactly.
const maxExactInt = 1 << 53

// Text is the text form of a scalar value a source read, as records'
// subjects and state versions carry it: strings as they are, integers
// (also integral doubles, as JSON carries them) in decimal, bools as true
// or false; "" is text too, which a state version may not be. Other
// values have none. The evidence adapter writes a state
// version into receipts and the action adapter re-reads it before an
// effect; both compute it here so that an unchanged record yields the
// same text.
func Text(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
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

// Redact hides a password in a URL-shaped connection string, for errors
// and logs.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Selects returns, for each of columns of table, the expression that
// selects it so that its value arrives as stored, whatever the column's
// declared type, and qualified by its table ([Column]). SQLite's driver
// turns text in DATE, DATETIME and TIMESTAMP columns into time values by
// the declared type: the no-op unary + drops the declared type. PostgreSQL
// hands back booleans, integers, floats, text and byte strings as they
// are; a column of any other type (a timestamp, a numeric, a uuid, a
// json) is selected as its text, as PostgreSQL writes it, so that every
// value read is a plain scalar.
func Selects(ctx context.Context, db *sql.DB, table string, columns []string) ([]string, error) {
	out := make([]string, len(columns))
	if !IsPostgresDB(db) {
		for i, c := range columns {
			out[i] = "+" + Column(table, c)
		}
		return out, nil
	}
	types, err := postgresColumnTypes(ctx, db, table)
	if err != nil {
		return nil, err
	}
	for i, c := range columns {
		out[i] = Column(table, c)
		if typ, ok := types[c]; ok && !postgresScalar[typ] {
			out[i] = "CAST(" + out[i] + " AS TEXT)"
		}
	}
	return out, nil
}

// postgresScalar are the PostgreSQL types (information_schema's
// data_type) that pgx reads as a plain Go value.
var postgresScalar = map[string]bool{
	"boolean": true, "smallint": true, "integer": true, "bigint": true,
	"real": true, "double precision": true,
	"text": true, "character varying": true, "character": true, "bytea": true,
}

// postgresColumnTypes maps each column of table to its data_type.
func postgresColumnTypes(ctx context.Context, db *sql.DB, table string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = ?`, table)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	out := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		out[name] = typ
	}
	return out, rows.Err()
}
