package journal

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/sqldb"
	_ "modernc.org/sqlite"
)

// TestReplayedKindReadsItsIndex: reading the ledger's entries, whole or
// after a position, searches the partial index of them alone, not every
// entry of the journal; another kind is read all the same.
func TestReplayedKindReadsItsIndex(t *testing.T) {
	ctx := context.Background()
	db := memoryJournal(t)
	for _, limit := range []int{0, 10} {
		query, args := kindQuery(ReplayedKind, 5, limit)
		plan := queryPlan(t, db, query, args...)
		if len(plan) != 1 || !strings.HasPrefix(plan[0], "SEARCH journal USING INDEX journal_replayed") {
			t.Errorf("limit %d: reading the ledger's entries plans %q, want a search of journal_replayed", limit, plan)
		}
	}
	for _, e := range []struct{ kind, ref string }{{"decision", "dec-1"}, {ReplayedKind, "CTR-1"}, {"decision", "dec-2"}, {ReplayedKind, "CTR-2"}} {
		if _, err := Append(ctx, db, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), e.kind, e.ref, []byte(e.ref)); err != nil {
			t.Fatal(err)
		}
	}
	for kind, want := range map[string]string{ReplayedKind: "CTR-1 CTR-2", "decision": "dec-1 dec-2"} {
		es, err := ReadKindAfter(ctx, db, kind, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var refs []string
		for _, e := range es {
			refs = append(refs, e.Ref)
		}
		if got := strings.Join(refs, " "); got != want {
			t.Errorf("ReadKindAfter(%s, 0, 0) = %s, want %s", kind, got, want)
		}
	}
}

// queryPlan is the database's plan of query, a line a step: SQLite's
// EXPLAIN QUERY PLAN details, or PostgreSQL's EXPLAIN.
func queryPlan(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	explain := `EXPLAIN QUERY PLAN `
	if sqldb.IsPostgresDB(db) {
		explain = `EXPLAIN `
	}
	rows, err := db.Query(explain+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var step string
		into := []any{&id, &parent, &unused, &step}
		if sqldb.IsPostgresDB(db) {
			into = []any{&step}
		}
		if err := rows.Scan(into...); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, step)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

// memoryJournal is an empty journal in an in-memory SQLite database.
func memoryJournal(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// One connection: each would open a memory database of its own.
	db.SetMaxOpenConns(1)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}
