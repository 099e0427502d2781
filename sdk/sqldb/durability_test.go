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
	// check opens each level with a fresh dsn and reads setting back.
	check := func(dsn func() string, setting string, want map[sqldb.Durability]string) {
		t.Helper()
		for d, want := range want {
			db, err := sqldb.OpenDurable(dsn(), d)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := db.QueryRow(setting).Scan(&got); err != nil || got != want {
				t.Errorf("%s: %s = %q, %v; want %q", d, setting, got, err, want)
			}
			db.Close()
		}
	}
	file := func() string { return filepath.Join(t.TempDir(), "x.db") }
	check(file, `PRAGMA synchronous`, map[sqldb.Durability]string{sqldb.DurabilityFull: "2", sqldb.DurabilityNormal: "1"})
	if _, err := sqldb.OpenDurable(file(), "eventually"); err == nil || !strings.Contains(err.Error(), "full or normal") {
		t.Errorf("OpenDurable(eventually) = %v", err)
	}
	pg := pgtest.Database(t)
	check(func() string { return pg }, `SHOW synchronous_commit`, map[sqldb.Durability]string{sqldb.DurabilityFull: "on", sqldb.DurabilityNormal: "off"})
}
