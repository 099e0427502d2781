package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

var pendingT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func pendingCapability(n int) Capability {
	id := fmt.Sprintf("cap-%04d", n)
	return Capability{
		CapabilityID: id, DecisionID: "dec-" + id, TaskID: "task-1", Record: "claims/C-1", StateVersion: "claims-v42",
		IdempotencyKey: "idem-" + id, Tool: "refund", Currency: "GBP", AmountMinor: 100, Status: agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED,
		IssuedAt: pendingT0.Add(time.Duration(n) * time.Second), ExpiresAt: pendingT0.Add(time.Duration(n)*time.Second + 5*time.Minute),
	}
}

// issue commits capabilities from, ..., to-1, one update each.
func issue(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for n := from; n < to; n++ {
		if err := s.Update(context.Background(), func(tx Tx) error { return tx.InsertCapability(pendingCapability(n)) }); err != nil {
			t.Fatal(err)
		}
	}
}

// rowsIn counts the rows of table as the writer sees them.
func rowsIn(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// allMoved waits up to 10s for the background to move every pending
// capability, and checks that n were.
func allMoved(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for rowsIn(t, s, "capabilities_pending") > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p, m := rowsIn(t, s, "capabilities_pending"), rowsIn(t, s, "capabilities"); p != 0 || m != n {
		t.Errorf("%d pending and %d moved, want 0 and %d", p, m, n)
	}
}

// TestPendingCapabilities: a new capability waits in capabilities_pending,
// and every read of capabilities sees it there as it would in
// capabilities; a capability that changes moves first; moving the rest
// changes nothing a read sees.
func TestPendingCapabilities(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	s.mover.close() // this test moves them itself
	// held checks how many capabilities wait and how many moved.
	held := func(when string, pending, moved int) {
		t.Helper()
		if p, m := rowsIn(t, s, "capabilities_pending"), rowsIn(t, s, "capabilities"); p != pending || m != moved {
			t.Fatalf("%s: %d pending and %d moved, want %d and %d", when, p, m, pending, moved)
		}
	}
	issue(t, s, 0, 3)
	held("issued", 3, 0)
	redeemed := agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
	// reads checks what every read of capabilities sees: the three, the
	// first with status first.
	reads := func(when string, first agentv1.CommitmentStatus) {
		t.Helper()
		err := s.View(ctx, func(tx Tx) error {
			c, err := tx.Capability("cap-0000")
			if err != nil || c.Status != first {
				return fmt.Errorf("Capability = %v, %v; want status %v", c.Status, err, first)
			}
			var outstanding []string
			for n := range 3 {
				if n > 0 || first != redeemed {
					outstanding = append(outstanding, pendingCapability(n).CapabilityID)
				}
			}
			for _, q := range []struct {
				name string
				read func() ([]Capability, error)
				want []string
			}{
				{"Capabilities", func() ([]Capability, error) { return tx.Capabilities("task-1") }, []string{"cap-0000", "cap-0001", "cap-0002"}},
				{"CapabilitiesAfter", func() ([]Capability, error) { return tx.CapabilitiesAfter("", "", 10) }, []string{"cap-0000", "cap-0001", "cap-0002"}},
				{"CapabilitiesAfter a task's", func() ([]Capability, error) { return tx.CapabilitiesAfter("task-1", "cap-0000", 1) }, []string{"cap-0001"}},
				{"Outstanding on the record", func() ([]Capability, error) { return tx.Outstanding("claims/C-1", "") }, outstanding},
				{"Due an hour on", func() ([]Capability, error) { return tx.(*txn).due("task-1", pendingT0.Add(time.Hour)) }, outstanding},
			} {
				got, err := q.read()
				var ids []string
				for _, c := range got {
					ids = append(ids, c.CapabilityID)
				}
				if err != nil || !slices.Equal(ids, q.want) {
					return fmt.Errorf("%s = %v, %v; want %v", q.name, ids, err, q.want)
				}
			}
			u, err := tx.(*txn).countUsage("task-1")
			if err != nil || u.actions != 3 || u.minor["GBP"] != 300 {
				return fmt.Errorf("usage = %+v, %v; want 3 actions, GBP 300", u, err)
			}
			w, err := tx.WatchedRecords(pendingT0, pendingT0.Add(time.Minute), "")
			if err != nil || (len(w) == 1) != (len(outstanding) > 0) {
				return fmt.Errorf("watched records = %v, %v", w, err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	reads("all pending", agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED)

	c := pendingCapability(0)
	c.Status, c.EffectReceiptID = redeemed, "eff-1"
	if err := s.Update(ctx, func(tx Tx) error { return tx.UpdateCapability(c) }); err != nil {
		t.Fatal(err)
	}
	held("one changed", 2, 1)
	reads("one changed", redeemed)

	if err := s.Update(ctx, func(tx Tx) error { return tx.(*txn).moveCapabilities() }); err != nil {
		t.Fatal(err)
	}
	held("all moved", 0, 3)
	reads("all moved", redeemed)
}

// TestPendingCapabilitiesReopen: capabilities still pending when a store
// closes are there when it opens again, and the background moves them.
func TestPendingCapabilitiesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := Open(context.Background(), path, DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	s.mover.close()
	issue(t, s, 0, 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), path, DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.View(context.Background(), func(tx Tx) error {
		got, err := tx.Capabilities("task-1")
		if err == nil && len(got) != 4 {
			err = fmt.Errorf("%d capabilities, want 4", len(got))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	allMoved(t, s, 4)
}

// TestReadsWhileMoving: reads racing moves see every capability committed
// before they began, once.
func TestReadsWhileMoving(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	s.mover.close()
	var committed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // moves, as fast as it can
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Update(ctx, func(tx Tx) error { return tx.(*txn).moveCapabilities() }); err != nil {
				t.Error(err)
				return
			}
		}
	})
	errs := make(chan error, 1)
	wg.Go(func() { // reads, in snapshots and without
		for {
			select {
			case <-stop:
				return
			default:
			}
			before := committed.Load()
			var got []Capability
			read := func(tx Tx) (err error) {
				got, err = tx.Capabilities("task-1")
				return err
			}
			err := s.View(ctx, read)
			if err == nil {
				err = s.Read(ctx, read)
			}
			seen := map[string]bool{}
			for _, c := range got {
				if seen[c.CapabilityID] {
					err = fmt.Errorf("%s read twice", c.CapabilityID)
				}
				seen[c.CapabilityID] = true
			}
			if err == nil && int64(len(got)) < before {
				err = fmt.Errorf("read %d capabilities, %d were committed before", len(got), before)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	})
	for n := range 60 {
		issue(t, s, n, n+1)
		committed.Add(1)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// TestMoveFailureReported: a background move that fails is reported to
// the hook OnMoveError set, and leaves the capabilities pending.
func TestMoveFailureReported(t *testing.T) {
	s := openFresh(t)
	s.mover.close()
	issue(t, s, 0, 1)
	// A row of the same capability already moved: the move cannot insert
	// it again.
	if _, err := s.db.Exec(`INSERT INTO capabilities (` + capabilityColumns + `) SELECT ` + capabilityColumns + ` FROM capabilities_pending`); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.mover, err = startMover(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	reported(t, s.OnMoveError, "move pending capabilities")
	if p := rowsIn(t, s, "capabilities_pending"); p != 1 {
		t.Errorf("%d pending after the failed move, want 1", p)
	}
}

// TestBackgroundMoves: the background moves every pending capability,
// those of updates that ran statements of their own (a proposal with a
// request id records its answer) as well as those of updates that ran
// none.
func TestBackgroundMoves(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	for n := range 4 {
		err := s.Update(ctx, func(tx Tx) error {
			if err := tx.InsertCapability(pendingCapability(n)); err != nil {
				return err
			}
			if n%2 == 1 {
				return nil
			}
			return tx.InsertRequest(Request{TaskID: "task-1", RequestID: fmt.Sprintf("req-%d", n), Agent: "agent", CallHash: "h", Response: []byte("r"), At: pendingT0})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	allMoved(t, s, 4)
}

// TestMovesAtSize: moveAt capabilities stored since the last move are
// moved at once, without waiting for the tick; fewer wait for it.
func TestMovesAtSize(t *testing.T) {
	every := moveEvery
	moveEvery = time.Hour
	defer func() { moveEvery = every }()
	s := openFresh(t)
	store := func(from, to int) {
		t.Helper()
		err := s.Update(context.Background(), func(tx Tx) error {
			for n := from; n < to; n++ {
				if err := tx.InsertCapability(pendingCapability(n)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	store(0, moveAt-1)
	time.Sleep(300 * time.Millisecond)
	if p := rowsIn(t, s, "capabilities_pending"); p != moveAt-1 {
		t.Fatalf("%d pending before the tick with %d stored, want all %d", p, moveAt-1, moveAt-1)
	}
	store(moveAt-1, moveAt)
	allMoved(t, s, moveAt)
	// The count starts again after a move.
	store(moveAt, moveAt+10)
	time.Sleep(300 * time.Millisecond)
	if p := rowsIn(t, s, "capabilities_pending"); p != 10 {
		t.Errorf("%d pending after a move and 10 more stored, want 10", p)
	}
}

// TestWatchedPassesOverLapsed: a record outstanding capabilities depend on
// is watched while one of them has not expired, whether they wait to move
// or have moved; a record whose outstanding capabilities have all expired
// (not yet marked so), or whose capability was redeemed, is not.
func TestWatchedPassesOverLapsed(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	s.mover.close() // this test moves them itself
	now := pendingT0.Add(time.Hour)
	n := 0
	insert := func(record string, issuedBefore time.Duration, status agentv1.CommitmentStatus) {
		t.Helper()
		c := pendingCapability(n)
		n++
		c.Record, c.Status = record, status
		c.IssuedAt = now.Add(-issuedBefore)
		c.ExpiresAt = c.IssuedAt.Add(5 * time.Minute)
		if err := s.Update(ctx, func(tx Tx) error { return tx.InsertCapability(c) }); err != nil {
			t.Fatal(err)
		}
	}
	authorised, redeemed := agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
	insert("claims/C-1", time.Minute, authorised)
	insert("claims/C-1", 2*time.Minute, authorised)
	insert("claims/C-2", 10*time.Minute, authorised)
	insert("claims/C-3", 10*time.Minute, authorised)
	insert("claims/C-3", time.Minute, authorised)
	insert("claims/C-4", 20*time.Minute, authorised)
	insert("claims/C-4", 30*time.Minute, authorised)
	insert("claims/C-5", time.Minute, redeemed)
	if err := s.Update(ctx, func(tx Tx) error { return tx.(*txn).moveCapabilities() }); err != nil {
		t.Fatal(err)
	}
	insert("claims/C-6", time.Minute, authorised)
	insert("claims/C-7", 10*time.Minute, authorised)
	if p, m := rowsIn(t, s, "capabilities_pending"), rowsIn(t, s, "capabilities"); p != 2 || m != 8 {
		t.Fatalf("%d pending and %d moved, want 2 and 8", p, m)
	}
	// Read record by record, and (past a step) in one pass over the index.
	defer func(steps int) { dependedSteps = steps }(dependedSteps)
	for _, steps := range []int{dependedSteps, 1} {
		dependedSteps = steps
		err := s.View(ctx, func(tx Tx) error {
			w, err := tx.WatchedRecords(now, now, "")
			if err != nil {
				return err
			}
			var keys []string
			for _, r := range w {
				keys = append(keys, r.Key)
			}
			if want := []string{"C-1", "C-3", "C-6"}; !slices.Equal(keys, want) {
				t.Errorf("%d steps: watched %v, want %v", steps, keys, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatchedVersionsInBatches: the records that open work alone depends
// on come with the versions the kernel holds, looked up versionsBatch at
// a time, and "" for a record it holds none of.
func TestWatchedVersionsInBatches(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	now := pendingT0.Add(time.Hour)
	const n = 2*versionsBatch + 3
	err := s.Update(ctx, func(tx Tx) error {
		for i := range n {
			c := pendingCapability(i)
			c.Record, c.IssuedAt, c.ExpiresAt = fmt.Sprintf("claims/C-%04d", i), now, now.Add(5*time.Minute)
			if err := tx.InsertCapability(c); err != nil {
				return err
			}
			// Seen before the window: its version comes by lookup.
			if i%3 != 0 {
				if err := tx.SetRecordVersion("claims", fmt.Sprintf("C-%04d", i), fmt.Sprintf("v%d", i), pendingT0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx Tx) error {
		w, err := tx.WatchedRecords(now, now, "")
		if err != nil {
			return err
		}
		if len(w) != n {
			t.Fatalf("%d records watched, want %d", len(w), n)
		}
		for i, r := range w {
			want := ""
			if i%3 != 0 {
				want = fmt.Sprintf("v%d", i)
			}
			if r.Key != fmt.Sprintf("C-%04d", i) || r.StateVersion != want {
				t.Errorf("watched[%d] = %+v, want C-%04d at %q", i, r, i, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
