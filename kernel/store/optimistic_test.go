package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

// TestStampsFollowCommits: a stamp moves when an update that wrote its key
// commits, not when one rolls back; inside a batch, a key an earlier update
// wrote counts as changed for the updates after it.
func TestStampsFollowCommits(t *testing.T) {
	s := newStore(t)
	if !s.Exclusive() {
		t.Skip("only an exclusive store follows its commits in memory")
	}
	ctx := context.Background()
	keys := []string{store.BindingKey("task-1"), store.RecordKey("claims", "C-1")}
	stamp := s.Versions(keys)
	unchanged := func(what string) {
		t.Helper()
		update(t, s, func(tx store.Tx) error {
			if tx.Changed(keys, stamp) {
				t.Errorf("%s: the stamp changed", what)
			}
			return nil
		})
	}
	unchanged("nothing written")
	errBoom := errors.New("boom")
	if err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.BindTask("task-1", store.Task{ItemID: "item", Agent: "agent"}, t0); err != nil {
			return err
		}
		return errBoom
	}); !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v", err)
	}
	unchanged("a rolled-back binding")
	update(t, s, func(tx store.Tx) error { return tx.BindTask("task-2", store.Task{ItemID: "item", Agent: "agent"}, t0) })
	unchanged("another task's binding")

	update(t, s, func(tx store.Tx) error { return tx.SetRecordVersion("claims", "C-1", "v2", t0) })
	update(t, s, func(tx store.Tx) error {
		if !tx.Changed(keys, stamp) {
			t.Error("a committed record version did not change the stamp")
		}
		return nil
	})

	// Within one update: the write is seen by the updates after it in its
	// batch, before it commits.
	stamp = s.Versions(keys)
	update(t, s, func(tx store.Tx) error {
		if err := tx.BindTask("task-1", store.Task{ItemID: "item-2", Agent: "agent"}, t0); err != nil {
			return err
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		if !tx.Changed(keys, stamp) {
			t.Error("a committed binding did not change the stamp")
		}
		return nil
	})
}

// TestStampsWithinABatch: updates grouped in one commit see each other's
// writes as changes.
func TestStampsWithinABatch(t *testing.T) {
	s := newStore(t)
	if !s.Exclusive() {
		t.Skip("only an exclusive store follows its commits in memory")
	}
	ctx := context.Background()
	keys := []string{store.BindingKey("task-1")}
	const n = 32
	var wg sync.WaitGroup
	var mu sync.Mutex
	writers, sawChange := 0, 0
	stamp := s.Versions(keys)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx store.Tx) error {
				mu.Lock()
				defer mu.Unlock()
				if tx.Changed(keys, stamp) {
					sawChange++
					return nil
				}
				writers++
				return tx.BindTask("task-1", store.Task{ItemID: fmt.Sprint("item-", i), Agent: "agent"}, t0)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if writers != 1 || sawChange != n-1 {
		t.Errorf("%d updates wrote under one stamp, %d saw the change; want 1 and %d", writers, sawChange, n-1)
	}
}

// TestUsageCountedInABatch: updates grouped into commits each issue a
// capability to a task memory has not counted, some then fail, and each
// asks for the task's usage in the writer, which must count what the
// update sees. Whichever update counts the task first, with the batch's
// earlier capabilities already in the table, memory ends with the
// committed count: that of the updates that succeeded, as a read of the
// table counts it.
func TestUsageCountedInABatch(t *testing.T) {
	s := newStore(t)
	if !s.Exclusive() {
		t.Skip("only an exclusive store keeps usage in memory")
	}
	ctx := context.Background()
	const n = 48
	errFail := errors.New("fail after issuing")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx store.Tx) error {
				c := capability(fmt.Sprint("b-", i), "task-b", "r", 0, t0)
				c.Status, c.Currency, c.AmountMinor, c.ExpiresAt = agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, "GBP", 10, t0.Add(time.Hour)
				if err := tx.InsertCapability(c); err != nil {
					return err
				}
				// What the writer counts is what it sees in the table.
				n, _, err := tx.Usage("task-b", "GBP")
				if err != nil {
					return err
				}
				if caps, err := tx.Capabilities("task-b"); err != nil || int(n) != len(caps) {
					t.Errorf("usage in the writer = %d; the table holds %d capabilities (%v)", n, len(caps), err)
				}
				if i%3 == 0 {
					return errFail
				}
				return nil
			})
			switch {
			case err == nil:
				mu.Lock()
				ok++
				mu.Unlock()
			case !errors.Is(err, errFail):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	count, sum, err := s.Usage(ctx, "task-b", "GBP")
	if err != nil || count != int32(ok) || sum != int64(10*ok) {
		t.Errorf("usage in memory = %d, %d, %v; want %d, %d", count, sum, err, ok, 10*ok)
	}
	view(t, s, func(tx store.Tx) error {
		c, sum, err := tx.Usage("task-b", "GBP")
		if err != nil || c != int32(ok) || sum != int64(10*ok) {
			t.Errorf("usage in the table = %d, %d, %v; want %d, %d", c, sum, err, ok, 10*ok)
		}
		return nil
	})
}

// TestUsageMirror: the usage memory holds equals the committed counters
// after inserts, status changes, expiry and rolled-back updates.
func TestUsageMirror(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := open(t, path)
	ctx := context.Background()
	now := t0.Add(time.Hour)
	check := func(what string) {
		t.Helper()
		for _, task := range []string{"task-1", "task-2", "task-9"} {
			for _, cur := range []string{"GBP", "EUR"} {
				mc, ms, merr := s.Usage(ctx, task, cur)
				view(t, s, func(tx store.Tx) error {
					c, sum, err := tx.Usage(task, cur)
					if err != nil || merr != nil || c != mc || sum != ms {
						t.Errorf("%s: usage of %s in %s: memory %d, %d, %v; database %d, %d, %v", what, task, cur, mc, ms, merr, c, sum, err)
					}
					return nil
				})
			}
		}
	}
	mk := func(id, task, cur string, minor int64, expires time.Time) store.Capability {
		c := capability(id, task, "r", 0, t0)
		c.Status, c.Currency, c.AmountMinor, c.ExpiresAt = agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, cur, minor, expires
		return c
	}
	update(t, s, func(tx store.Tx) error {
		for _, c := range []store.Capability{
			mk("a", "task-1", "GBP", 100, now.Add(time.Minute)),
			mk("b", "task-1", "EUR", 200, now.Add(-time.Minute)),
			mk("c", "task-2", "GBP", 400, now.Add(time.Minute)),
		} {
			if err := tx.InsertCapability(c); err != nil {
				return err
			}
		}
		return nil
	})
	check("after inserts")
	errBoom := errors.New("boom")
	_ = s.Update(ctx, func(tx store.Tx) error {
		if err := tx.InsertCapability(mk("d", "task-1", "GBP", 800, now.Add(time.Minute))); err != nil {
			return err
		}
		return errBoom
	})
	check("after a rolled-back insert")
	update(t, s, func(tx store.Tx) error {
		due, err := tx.Due("task-1", now)
		if err != nil || len(due) != 1 || due[0].CapabilityID != "b" {
			t.Errorf("Due = %v, %v; want b", due, err)
		}
		return tx.ExpireDue("task-1", now)
	})
	check("after expiry")
	update(t, s, func(tx store.Tx) error {
		c, err := tx.Capability("c")
		if err != nil {
			return err
		}
		c.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED
		return tx.UpdateCapability(c)
	})
	check("after a revocation")
	// A capability whose target refused its effect stops counting.
	update(t, s, func(tx store.Tx) error {
		e := mk("e", "task-2", "GBP", 1600, now.Add(time.Minute))
		e.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
		return tx.InsertCapability(e)
	})
	check("after a redemption")
	update(t, s, func(tx store.Tx) error {
		c, err := tx.Capability("e")
		if err != nil {
			return err
		}
		c.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_REFUSED
		return tx.UpdateCapability(c)
	})
	check("after a refusal")
	if got, _, _ := s.Usage(ctx, "task-2", "GBP"); got != 0 {
		t.Errorf("usage of task-2 after a revocation and a refusal = %d, want 0", got)
	}
	// A store opened again counts a task's usage from its capabilities.
	want1, _, _ := s.Usage(ctx, "task-1", "GBP")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	check("after reopening")
	if got, _, _ := s.Usage(ctx, "task-1", "GBP"); got != want1 || got != 1 {
		t.Errorf("usage of task-1 after reopening = %d, want %d (1)", got, want1)
	}
	// and from the outstanding capabilities' expiries: a Read finds a
	// due one without having seen it issued.
	if err := s.Read(ctx, func(tx store.Tx) error {
		due, err := tx.Due("task-1", now.Add(2*time.Minute))
		if err != nil || len(due) != 1 || due[0].CapabilityID != "a" {
			t.Errorf("Due after reopening = %v, %v; want a", due, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestReadThroughMemory: a read transaction of an exclusive store sees
// every committed binding, record version and evidence row, whether memory
// held the key before or not.
func TestReadThroughMemory(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "k.db"))
	ctx := context.Background()
	read := func(what, wantItem, wantVersion string, wantEvidence bool) {
		t.Helper()
		err := s.Read(ctx, func(tx store.Tx) error {
			b, err := tx.Task("task-1")
			if wantItem == "" {
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s: Task = %v, %v; want not found", what, b, err)
				}
			} else if err != nil || b.ItemID != wantItem {
				t.Errorf("%s: Task = %v, %v; want %s", what, b, err, wantItem)
			}
			v, ok, err := tx.RecordVersion("claims", "C-1")
			if err != nil || v != wantVersion || ok != (wantVersion != "") {
				t.Errorf("%s: RecordVersion = %q, %v, %v; want %q", what, v, ok, err, wantVersion)
			}
			e, err := tx.Evidence("ev-1")
			if wantEvidence && (err != nil || e.EnvelopeHash != "h1" || !e.ReadAt.Equal(t0)) {
				t.Errorf("%s: Evidence = %+v, %v", what, e, err)
			}
			if !wantEvidence && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: Evidence = %+v, %v; want not found", what, e, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	read("empty", "", "", false)
	update(t, s, func(tx store.Tx) error {
		if err := tx.BindTask("task-1", store.Task{ItemID: "item-1", Agent: "agent"}, t0); err != nil {
			return err
		}
		if err := tx.SetRecordVersion("claims", "C-1", "v1", t0); err != nil {
			return err
		}
		_, err := tx.InsertEvidence(store.Evidence{ReceiptID: "ev-1", TaskID: "task-1", EnvelopeHash: "h1", Source: "claims", RecordKey: "C-1", StateVersion: "v1", ReadAt: t0})
		return err
	})
	read("after the first writes", "item-1", "v1", true)
	read("again, from memory", "item-1", "v1", true)
	update(t, s, func(tx store.Tx) error {
		if err := tx.BindTask("task-1", store.Task{ItemID: "item-2", Agent: "agent"}, t0); err != nil {
			return err
		}
		return tx.SetRecordVersion("claims", "C-1", "v2", t0)
	})
	read("after the second writes", "item-2", "v2", true)
}

// TestJournalStoredAtCommit: entries appended in an update are stored with
// its batch; until then LogIndex finds them, and a rolled-back update's are
// never stored.
func TestJournalStoredAtCommit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error {
		e, err := tx.Append(t0, "effect", "eff-1", []byte("one"))
		if err != nil {
			return err
		}
		i, err := tx.LogIndex("effect", "eff-1")
		if err != nil || i != uint64(e.Seq-1) {
			t.Errorf("LogIndex in the appending update = %d, %v; want %d", i, err, e.Seq-1)
		}
		return nil
	})
	errBoom := errors.New("boom")
	if err := s.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Append(t0, "effect", "eff-2", []byte("two")); err != nil {
			return err
		}
		return errBoom
	}); !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	update(t, s, func(tx store.Tx) error {
		e, err := tx.Append(t0, "effect", "eff-3", []byte("three"))
		if err != nil || e.Seq != 2 {
			t.Errorf("entry after a rolled-back one = %d, %v; want 2", e.Seq, err)
		}
		if _, err := tx.LogIndex("effect", "eff-2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LogIndex of a rolled-back entry = %v, want not found", err)
		}
		i, err := tx.LogIndex("effect", "eff-1")
		if err != nil || i != 0 {
			t.Errorf("LogIndex of a committed entry = %d, %v", i, err)
		}
		return nil
	})
	es, err := s.Entries(ctx, 0, 0)
	if err != nil || len(es) != 2 || es[0].Ref != "eff-1" || es[1].Ref != "eff-3" {
		t.Fatalf("entries = %v, %v", es, err)
	}
	if rep, err := s.VerifyJournal(ctx, nil); err != nil || !rep.OK {
		t.Errorf("VerifyJournal = %+v, %v", rep, err)
	}
}
