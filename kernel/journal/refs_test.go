package journal

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// oddRefs are refs whose tails are short, shared or empty, beside one of
// the time-ordered identifiers Ambit issues.
var oddRefs = []string{"task-01", "CTR-task-01", "ev-ABC", "00ff", "café-0a", "dec-", "cap-0193a1b2c3d4e5f6a7b8c9d0"}

// TestRefIndexKeysTails: the SQL that keys the index of refs computes
// each ref's tail as RefTail does, and the query ReadRefs makes reads
// that index.
func TestRefIndexKeysTails(t *testing.T) {
	db := memoryJournal(t)
	for _, ref := range oddRefs {
		if _, err := Append(context.Background(), db, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), "k", ref, []byte(ref)); err != nil {
			t.Fatal(err)
		}
	}
	checkRefIndex(t, db, oddRefs[:2], "USING INDEX journal_ref_tail")
	// Three refs bind four, the last twice: each entry is read once.
	checkRefIndex(t, db, oddRefs[2:5], "USING INDEX journal_ref_tail")
}

// TestRefsQueryTexts: however many refs a read binds, up to refsPerRead,
// its statement is one of a handful of texts, which a caller can keep
// prepared.
func TestRefsQueryTexts(t *testing.T) {
	texts := map[string]bool{}
	for n := 1; n <= refsPerRead; n++ {
		refs := make([]string, n)
		for i := range refs {
			refs[i] = fmt.Sprintf("dec-%04x", i)
		}
		query, args := refsQuery(refs)
		texts[query] = true
		if got, want := args[len(args)-1], refs[n-1]; got != want {
			t.Fatalf("%d refs: last argument %v, want the last ref %q", n, got, want)
		}
	}
	if len(texts) != 10 {
		t.Errorf("%d refs read with %d texts, want 10 (1, 2, 4 … 512 refs)", refsPerRead, len(texts))
	}
}

// TestRefIndexOnPostgres: on PostgreSQL too, the index of refs keys each
// ref's tail as RefTail does, and its planner reads a journal's entries
// by ref through that index, not by a scan of the journal.
func TestRefIndexOnPostgres(t *testing.T) {
	ctx := context.Background()
	db, err := sqldb.OpenPostgres(pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, stmt := range append([]string{Table}, RefIndex...) {
		if _, err := db.ExecContext(ctx, sqldb.PostgresTypes(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	// Enough entries that a scan costs the planner more than the index.
	f := NewFrontier()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var rows []Row
	for i := range 20_000 {
		ref := fmt.Sprintf("dec-%012x", 0x0193a1b2c3d4+i)
		if i < len(oddRefs) {
			ref = oddRefs[i]
		}
		r, err := Next(f, at, "decision", ref, []byte(ref))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if err := InsertRows(ctx, db, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `ANALYZE journal`); err != nil {
		t.Fatal(err)
	}
	checkRefIndex(t, db, []string{"CTR-task-01", rows[12_345].Ref}, "journal_ref_tail")
}

// checkRefIndex checks, over a journal holding oddRefs and refs, that
// the SQL tail of each of oddRefs is RefTail's, that the plan of a read of
// refs has a step naming the index (SQLite and PostgreSQL word it
// differently), and that the read finds refs' entries.
func checkRefIndex(t *testing.T, db *sql.DB, refs []string, index string) {
	t.Helper()
	for _, ref := range oddRefs {
		var tail string
		if err := db.QueryRow(`SELECT `+refTail+` FROM journal WHERE ref = ?`, ref).Scan(&tail); err != nil || tail != RefTail(ref) {
			t.Errorf("SQL tail of %q = %q, %v; RefTail says %q", ref, tail, err, RefTail(ref))
		}
	}
	query, args := refsQuery(refs)
	if plan := queryPlan(t, db, query, args...); !slices.ContainsFunc(plan, func(step string) bool { return strings.Contains(step, index) }) {
		t.Errorf("plan of a read by ref = %q, want a step with %q", plan, index)
	}
	es, err := ReadRefs(context.Background(), db, refs)
	if err != nil || len(es) != len(refs) {
		t.Fatalf("ReadRefs(%q) = %v, %v", refs, es, err)
	}
	for i, e := range es {
		if e.Ref != refs[i] {
			t.Errorf("ReadRefs(%q): entry %d is %q", refs, i, e.Ref)
		}
	}
}
