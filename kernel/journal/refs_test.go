package journal

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
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
