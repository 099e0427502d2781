package journal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// TestRefIndexKeysTails: the SQL that keys the index of refs computes
// each ref's tail as RefTail does, and the query ReadRefs makes reads
// that index.
func TestRefIndexKeysTails(t *testing.T) {
	ctx := context.Background()
	db := memoryJournal(t)
	refs := []string{"task-01", "CTR-task-01", "ev-ABC", "00ff", "cap-0193a1b2c3d4e5f6a7b8c9d0", "café-0a", "dec-"}
	for _, ref := range refs {
		if _, err := Append(ctx, db, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), "k", ref, []byte(ref)); err != nil {
			t.Fatal(err)
		}
		var tail string
		if err := db.QueryRow(`SELECT `+refTail+` FROM journal WHERE ref = ?`, ref).Scan(&tail); err != nil || tail != RefTail(ref) {
			t.Errorf("SQL tail of %q = %q, %v; RefTail says %q", ref, tail, err, RefTail(ref))
		}
	}
	query, args := refsQuery(refs[:2])
	if plan := queryPlan(t, db, query, args...); !slices.ContainsFunc(plan, func(d string) bool { return strings.Contains(d, "USING INDEX journal_ref_tail") }) {
		t.Errorf("plan of a read by ref = %q, want it to use journal_ref_tail", plan)
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
	odd := []string{"task-01", "CTR-task-01", "ev-ABC", "00ff", "café-0a", "dec-"}
	f := NewFrontier()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var rows []Row
	for i := range 20_000 {
		ref := fmt.Sprintf("dec-%012x", 0x0193a1b2c3d4+i)
		if i < len(odd) {
			ref = odd[i]
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
	for _, ref := range odd {
		var tail string
		if err := db.QueryRowContext(ctx, `SELECT `+refTail+` FROM journal WHERE ref = ?`, ref).Scan(&tail); err != nil || tail != RefTail(ref) {
			t.Errorf("SQL tail of %q = %q, %v; RefTail says %q", ref, tail, err, RefTail(ref))
		}
	}
	refs := []string{"CTR-task-01", rows[12_345].Ref}
	query, args := refsQuery(refs)
	var plan []string
	explained, err := db.QueryContext(ctx, `EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	for explained.Next() {
		var line string
		if err := explained.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := errors.Join(explained.Err(), explained.Close()); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, "journal_ref_tail") }) {
		t.Errorf("plan of a read by ref = %q, want it to use journal_ref_tail", plan)
	}
	es, err := ReadRefs(ctx, db, refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Ref != refs[0] || es[1].Ref != refs[1] {
		t.Errorf("ReadRefs(%q) = %v", refs, es)
	}
}
