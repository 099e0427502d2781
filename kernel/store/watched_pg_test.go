package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// TestWatchedReadsIndexOnPostgres: on PostgreSQL too, a watch poll finds
// the records outstanding capabilities depend on through their index by
// record, a search per record, not by a scan of the capabilities.
func TestWatchedReadsIndexOnPostgres(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.Database(t), DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// Enough capabilities that a scan costs the planner more than the
	// index.
	const n, records = 20_000, 10
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += 1000 {
		err := s.Update(ctx, func(tx Tx) error {
			for j := i; j < i+1000; j++ {
				c := pendingCapability(j)
				c.CapabilityID = fmt.Sprintf("cap-%07d", j)
				c.Record, c.IssuedAt, c.ExpiresAt = fmt.Sprintf("claims/C-%d", j%records), now, now.Add(5*time.Minute)
				if err := tx.InsertCapability(c); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `ANALYZE capabilities`); err != nil {
		t.Fatal(err)
	}
	plan := column(t, s.db, `EXPLAIN `+dependedStepsQuery, dependedSteps)
	// Each read of the index is a search: the next record after one, or
	// one record's latest expiry, never the whole index.
	searches, whole := 0, false
	for i, step := range plan {
		if !strings.Contains(step, "using capabilities_record") {
			continue
		}
		cond := ""
		if i+1 < len(plan) {
			cond = plan[i+1]
		}
		if strings.Contains(cond, "Index Cond:") && (strings.Contains(cond, "(record > ") || strings.Contains(cond, "(record = ")) {
			searches++
		} else {
			whole = true
		}
	}
	if text := strings.Join(plan, "\n"); searches < 2 || whole || strings.Contains(text, "Seq Scan on capabilities ") {
		t.Errorf("the poll's plan does not search capabilities_record, a record at a time:\n%s", text)
	}
	// Read record by record, and (past a step) in one pass over the index.
	defer func(steps int) { dependedSteps = steps }(dependedSteps)
	for _, steps := range []int{dependedSteps, 1} {
		dependedSteps = steps
		err = s.View(ctx, func(tx Tx) error {
			w, err := tx.WatchedRecords(now, now, "")
			if err == nil && len(w) != records {
				err = fmt.Errorf("%d steps: %d records watched, want %d", steps, len(w), records)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
