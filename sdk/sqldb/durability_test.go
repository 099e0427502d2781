package sqldb_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// TestDurability: each level reaches the database as its setting (SQLite's
// synchronous pragma, PostgreSQL's synchronous_commit), and an unknown
// level opens nothing.
func TestDurability(t *testing.T) {
	for d, want := range map[sqldb.Durability]string{sqldb.DurabilityFull: "2", sqldb.DurabilityNormal: "1"} {
		db, err := sqldb.OpenDurable(filepath.Join(t.TempDir(), "x.db"), d)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := db.QueryRow(`PRAGMA synchronous`).Scan(&got); err != nil || got != want {
			t.Errorf("%s: PRAGMA synchronous = %q, %v; want %q", d, got, err, want)
		}
		db.Close()
	}
	if _, err := sqldb.OpenDurable(filepath.Join(t.TempDir(), "x.db"), "eventually"); err == nil || !strings.Contains(err.Error(), "full or normal") {
		t.Errorf("OpenDurable(eventually) = %v", err)
	}
	dsn := pgtest.Database(t)
	for d, want := range map[sqldb.Durability]string{sqldb.DurabilityFull: "on", sqldb.DurabilityNormal: "off"} {
		db, err := sqldb.OpenDurable(dsn, d)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := db.QueryRow(`SHOW synchronous_commit`).Scan(&got); err != nil || got != want {
			t.Errorf("%s: synchronous_commit = %q, %v; want %q", d, got, err, want)
		}
		db.Close()
	}
}
