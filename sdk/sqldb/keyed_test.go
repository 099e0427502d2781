package sqldb_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// TestKeyedTable: a keyed table is checked at open, naming the key path of
// what is missing, and reads one record by key, refusing a key that names
// two.
func TestKeyedTable(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "x.db")
	db, err := sqldb.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE claims (id TEXT, total INTEGER, note TEXT)`); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		table, key string
		columns    []string
		want       []string
	}{
		{"missing", "id", []string{"total"}, []string{`src.table: ` + p + ` has no table "missing"`}},
		{"claims", "claim_id", []string{"total", "amount"}, []string{`src.key: table "claims" has no column "claim_id"`, `src.columns[1]: table "claims" has no column "amount"`}},
	} {
		_, err := sqldb.OpenKeyedTable(ctx, "src", p, tc.table, tc.key, tc.columns)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("OpenKeyedTable(%s, %s, %v) = %v, want an error naming %q", tc.table, tc.key, tc.columns, err, w)
			}
		}
	}

	kt, err := sqldb.OpenKeyedTable(ctx, "src", p, "claims", "id", []string{"total", "note"})
	if err != nil {
		t.Fatal(err)
	}
	defer kt.Close()
	if err := kt.Check(ctx); err != nil {
		t.Errorf("Check on an empty table = %v, want nil", err)
	}
	if _, err := db.Exec(`INSERT INTO claims VALUES ('C-1', 1740, 'x'), ('C-2', 1, 'a'), ('C-2', 2, 'b')`); err != nil {
		t.Fatal(err)
	}
	if r, err := kt.Row(ctx, "C-1"); err != nil || r["total"] != int64(1740) || r["note"] != "x" || len(r) != 2 {
		t.Errorf("Row(C-1) = %v, %v; want total 1740, note x", r, err)
	}
	if r, err := kt.Row(ctx, "C-9"); err != nil || r != nil {
		t.Errorf("Row(C-9) = %v, %v; want no record", r, err)
	}
	if _, err := kt.Row(ctx, "C-2"); !errors.Is(err, sqldb.ErrAmbiguousKey) {
		t.Errorf("Row(C-2) = %v, want ErrAmbiguousKey", err)
	}
	if err := kt.Check(ctx); err != nil {
		t.Errorf("Check = %v", err)
	}

	// Many keys at once: only those that match one row, read as the key
	// asked for; more keys than one statement takes.
	keys := []string{"C-1", "C-2", "C-9"}
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("N-%03d", i))
	}
	if _, err := db.Exec(`INSERT INTO claims VALUES ('N-299', 299, 'n')`); err != nil {
		t.Fatal(err)
	}
	got, err := kt.Rows(ctx, keys)
	want := map[string]map[string]any{"C-1": {"total": int64(1740), "note": "x"}, "N-299": {"total": int64(299), "note": "n"}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("Rows = %v, %v; want %v", got, err, want)
	}

	// An integer key asked for as text that reads differently is left to
	// Row, which matches it as SQLite compares.
	if _, err := db.Exec(`CREATE TABLE accounts (id INTEGER, owner TEXT); INSERT INTO accounts VALUES (7, 'a')`); err != nil {
		t.Fatal(err)
	}
	at, err := sqldb.OpenKeyedTable(ctx, "src", p, "accounts", "id", []string{"owner"})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	if got, err := at.Rows(ctx, []string{"7", "007"}); err != nil || !cmp.Equal(got, map[string]map[string]any{"7": {"owner": "a"}}) {
		t.Errorf("Rows(7, 007) = %v, %v; want 7 alone", got, err)
	}
	if r, err := at.Row(ctx, "007"); err != nil || r["owner"] != "a" {
		t.Errorf("Row(007) = %v, %v; want owner a", r, err)
	}
}
