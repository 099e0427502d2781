package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// IsPostgres reports whether dsn names a PostgreSQL server
// (postgres:// or postgresql://).
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// OpenPostgres opens a PostgreSQL database through pgx, with params set on
// every connection (e.g. synchronous_commit). Queries keep SQLite's '?'
// placeholders, rewritten to '$n' on their way to the server, so that one
// SQL text serves both databases.
func OpenPostgres(dsn string, params map[string]string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDSN, Redact(dsn), redactErr(err, dsn))
	}
	for k, v := range params {
		cfg.RuntimeParams[k] = v
	}
	return sql.OpenDB(connector{stdlib.GetConnector(*cfg)}), nil
}

// sqliteToPostgres maps SQLite's column types onto PostgreSQL's: 64-bit
// integers (SQLite's INTEGER is 64-bit already) and byte strings.
var sqliteToPostgres = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bINTEGER\b`), "BIGINT"},
	{regexp.MustCompile(`\bBLOB\b`), "BYTEA"},
}

// PostgresTypes rewrites a schema statement written for SQLite with
// PostgreSQL's column types, so that one schema serves both databases.
func PostgresTypes(stmt string) string {
	for _, t := range sqliteToPostgres {
		stmt = t.re.ReplaceAllString(stmt, t.with)
	}
	return stmt
}

// redactErr drops the connection string from pgx's parse errors, which
// quote it whole, password included.
func redactErr(err error, dsn string) string {
	return strings.ReplaceAll(err.Error(), dsn, Redact(dsn))
}

// IsPostgresDB reports whether db was opened by [OpenPostgres].
func IsPostgresDB(db *sql.DB) bool {
	_, ok := db.Driver().(pgDriver)
	return ok
}

// connector hands out connections that rewrite placeholders.
type connector struct{ driver.Connector }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn2{conn.(*stdlib.Conn)}, nil
}

func (c connector) Driver() driver.Driver { return pgDriver{c.Connector.Driver()} }

// pgDriver marks a database opened by OpenPostgres.
type pgDriver struct{ driver.Driver }

// conn2 is pgx's connection with every query rebound; the rest of its
// methods (transactions, session reset, value checks) are pgx's own.
type conn2 struct{ *stdlib.Conn }

func (c *conn2) Prepare(query string) (driver.Stmt, error) { return c.Conn.Prepare(Rebind(query)) }

func (c *conn2) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, Rebind(query))
}

func (c *conn2) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, Rebind(query), args)
}

func (c *conn2) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, Rebind(query), args)
}

// rebound caches Rebind: queries are a small fixed set of texts.
var rebound sync.Map

// Rebind rewrites '?' placeholders to PostgreSQL's '$1', '$2', … in
// order, leaving those inside quoted strings and identifiers alone.
func Rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	if v, ok := rebound.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	var quote byte // the quote character of the literal we are in, or 0
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0 // a doubled quote reopens at once: same result
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(ch)
	}
	out := b.String()
	rebound.Store(query, out)
	return out
}
