package sqldb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// databases are the two databases: a test of what differs between them
// runs on each (PostgreSQL is skipped without a server, see pgtest).
var databases = []struct {
	name  string
	empty func(testing.TB) string
}{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "test.db") }},
	{"postgres", pgtest.Database},
}

// onEach runs test on an empty database of each kind.
func onEach(t *testing.T, test func(t *testing.T, dsn string, db *sql.DB)) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			dsn := d.empty(t)
			db, err := sqldb.Open(dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			test(t, dsn, db)
		})
	}
}

// TestRefused tells the writes a database refuses for what they hold from
// the others, on both databases.
func TestRefused(t *testing.T) {
	onEach(t, func(t *testing.T, dsn string, db *sql.DB) {
		ctx := context.Background()
		for _, stmt := range []string{
			`CREATE TABLE t (k TEXT PRIMARY KEY, u TEXT UNIQUE, n INTEGER NOT NULL CHECK (n >= 0))`,
			`INSERT INTO t VALUES ('a', 'x', 1)`,
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		type verdict struct{ Unique, Refused bool }
		tests := []struct {
			name string
			stmt string
			want verdict
		}{
			{"primary key taken", `INSERT INTO t VALUES ('a', 'y', 1)`, verdict{Unique: true, Refused: true}},
			{"unique column taken", `INSERT INTO t VALUES ('b', 'x', 1)`, verdict{Unique: true, Refused: true}},
			{"not null", `INSERT INTO t VALUES ('b', 'y', NULL)`, verdict{Refused: true}},
			{"check", `INSERT INTO t VALUES ('b', 'y', -1)`, verdict{Refused: true}},
			{"no such table", `INSERT INTO gone VALUES ('b')`, verdict{}},
		}
		if sqldb.IsPostgres(dsn) {
			// SQLite stores text in an INTEGER column as it is.
			tests = append(tests, struct {
				name string
				stmt string
				want verdict
			}{"not an integer", `INSERT INTO t VALUES ('b', 'y', 'many')`, verdict{Refused: true}})
		}
		for _, tt := range tests {
			_, err := db.ExecContext(ctx, tt.stmt)
			if err == nil {
				t.Errorf("%s: no error", tt.name)
				continue
			}
			got := verdict{sqldb.IsUniqueViolation(err), sqldb.IsRefused(err)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s: %v (-want +got):\n%s", tt.name, err, diff)
			}
		}
		if sqldb.IsUniqueViolation(nil) || sqldb.IsRefused(nil) {
			t.Error("nil is refused")
		}
	})
}

// TestSelects reads each column as stored: on SQLite whatever the
// declared type; on PostgreSQL the types pgx reads as scalars as they are,
// the others as their text.
func TestSelects(t *testing.T) {
	onEach(t, func(t *testing.T, dsn string, db *sql.DB) {
		ctx := context.Background()
		create := `CREATE TABLE t (k TEXT, n INTEGER, ok BOOLEAN, on_day DATE, amount NUMERIC(10, 2))`
		want := []any{"k-1", int64(7), true, "2026-03-02", "12.50"}
		if !sqldb.IsPostgres(dsn) {
			// SQLite stores a boolean as 1, keeps the text of a date
			// and makes a number of numeric text.
			want = []any{"k-1", int64(7), int64(1), "2026-03-02", 12.5}
		}
		for _, stmt := range []string{create, `INSERT INTO t VALUES ('k-1', 7, true, '2026-03-02', '12.50')`} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		cols := []string{"k", "n", "ok", "on_day", "amount"}
		sel, err := sqldb.Selects(ctx, db, "t", cols)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range got {
			ptrs[i] = &got[i]
		}
		query := `SELECT ` + sel[0]
		for _, s := range sel[1:] {
			query += ", " + s
		}
		if err := db.QueryRowContext(ctx, query+` FROM t`).Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", query, diff)
		}
	})
}
