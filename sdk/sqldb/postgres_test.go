package sqldb_test

import (
	"context"
	"testing"

	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`:                                      `SELECT 1`,
		`SELECT a FROM t WHERE b = ? AND c > ?`:         `SELECT a FROM t WHERE b = $1 AND c > $2`,
		`SELECT '?', "x?" FROM t WHERE a = ? OR b = ''`: `SELECT '?', "x?" FROM t WHERE a = $1 OR b = ''`,
		`SELECT 'it''s ?' WHERE a = ?`:                  `SELECT 'it''s ?' WHERE a = $1`,
	} {
		if got := sqldb.Rebind(in); got != want {
			t.Errorf("Rebind(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPostgresTypes(t *testing.T) {
	for in, want := range map[string]string{
		`CREATE TABLE t (seq INTEGER PRIMARY KEY, body BLOB NOT NULL, note TEXT)`: `CREATE TABLE t (seq BIGINT PRIMARY KEY, body BYTEA NOT NULL, note TEXT)`,
		// Only whole words: a column named like a type keeps its name.
		`CREATE TABLE blobs (blob_id TEXT, integers INTEGER)`: `CREATE TABLE blobs (blob_id TEXT, integers BIGINT)`,
	} {
		if got := sqldb.PostgresTypes(in); got != want {
			t.Errorf("PostgresTypes(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPostgres opens a real server the way connectors do: '?' queries, the
// read-only handle refused a write, columns listed, and an unknown column
// an error.
func TestPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	db, err := sqldb.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !sqldb.IsPostgresDB(db) {
		t.Fatal("IsPostgresDB = false for a postgres:// database")
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE claims (id TEXT PRIMARY KEY, amount_minor BIGINT NOT NULL, body BYTEA)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO claims (id, amount_minor, body) VALUES (?, ?, ?)`, "c-1", int64(4200), []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	var amount int64
	var body []byte
	if err := db.QueryRowContext(ctx, `SELECT amount_minor, body FROM claims WHERE id = ? AND ? = 'x'`, "c-1", "x").Scan(&amount, &body); err != nil || amount != 4200 || len(body) != 2 {
		t.Fatalf("read = %d %v, %v", amount, body, err)
	}
	cols, err := sqldb.TableColumns(ctx, db, "claims")
	if err != nil || len(cols) != 3 || !sqldb.HasColumn(cols, "amount_minor") || sqldb.HasColumn(cols, "gone") {
		t.Fatalf("TableColumns = %v, %v", cols, err)
	}
	if _, err := db.QueryContext(ctx, `SELECT `+sqldb.Column("claims", "gone")+` FROM claims`); err == nil {
		t.Error("an unknown column read without error")
	}

	ro, err := sqldb.OpenReadOnly(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.QueryRowContext(ctx, `SELECT amount_minor FROM claims WHERE id = ?`, "c-1").Scan(&amount); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.ExecContext(ctx, `INSERT INTO claims (id, amount_minor) VALUES (?, ?)`, "c-2", int64(1)); err == nil {
		t.Error("a read-only handle wrote")
	}
}
