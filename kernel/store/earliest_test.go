package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

// TestEarliestMovesOn: a task's mark is unknown until a read of its due
// capabilities sets it, and issuing to an unknown task leaves it unknown
// (older capabilities may expire sooner); once a task's earliest expiry
// has passed with nothing due (its capability was redeemed), a read of its
// due capabilities moves memory's mark to the next outstanding expiry, or
// to none, so that later decisions stop reading the table; a mark read
// while a commit issued capabilities is not kept; and the marks are
// bounded.
func TestEarliestMovesOn(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	mk := func(id string, expires time.Time) Capability {
		return Capability{CapabilityID: id, DecisionID: "dec-" + id, TaskID: "task-1", Record: "claims_db/C-1", StateVersion: "v1",
			IdempotencyKey: "idem-" + id, Tool: "refund", Currency: "GBP", AmountMinor: 100,
			Status: agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, IssuedAt: t0, ExpiresAt: expires}
	}
	update := func(fn func(tx Tx) error) {
		t.Helper()
		if err := s.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	redeem := func(id string) {
		t.Helper()
		update(func(tx Tx) error {
			c, err := tx.Capability(id)
			if err != nil {
				return err
			}
			c.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
			return tx.UpdateCapability(c)
		})
	}
	mark := func() (time.Time, bool) {
		s.mirror.mu.Lock()
		defer s.mirror.mu.Unlock()
		at, ok := s.mirror.earliest["task-1"]
		return at, ok
	}
	due := func(now time.Time) {
		t.Helper()
		if err := s.Read(ctx, func(tx Tx) error {
			due, err := tx.Due("task-1", now)
			if err != nil || len(due) != 0 {
				t.Errorf("Due at %s = %v, %v; want none", now, due, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx Tx) error { return tx.InsertCapability(mk("z", t0.Add(time.Minute))) })
	if at, ok := mark(); ok {
		t.Fatalf("mark after issuing to an unknown task = %s, want unknown", at)
	}
	redeem("z")
	due(t0)
	if at, ok := mark(); !ok || !at.IsZero() {
		t.Fatalf("mark after a read with nothing outstanding = %s %v, want none", at, ok)
	}
	update(func(tx Tx) error {
		if err := tx.InsertCapability(mk("a", t0.Add(time.Minute))); err != nil {
			return err
		}
		return tx.InsertCapability(mk("b", t0.Add(10*time.Minute)))
	})
	if at, ok := mark(); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("mark after issuing = %s %v, want a's expiry", at, ok)
	}
	redeem("a")
	due(t0.Add(2 * time.Minute))
	if at, ok := mark(); !ok || !at.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("mark after a's expiry passed = %s %v, want b's expiry", at, ok)
	}
	redeem("b")
	due(t0.Add(11 * time.Minute))
	if at, ok := mark(); !ok || !at.IsZero() {
		t.Errorf("mark with nothing outstanding = %s %v, want none", at, ok)
	}

	// After a commit that issued capabilities since the mark was checked,
	// the mark is kept as that commit left it, whatever the table says
	// when it is read (here: nothing outstanding, d redeemed meanwhile).
	update(func(tx Tx) error { return tx.InsertCapability(mk("c", t0.Add(time.Hour))) })
	redeem("c")
	if err := s.Read(ctx, func(tx Tx) error {
		tr := tx.(*txn)
		_, gen := tr.noneDue("task-1", t0.Add(2*time.Hour))
		update(func(tx Tx) error { return tx.InsertCapability(mk("d", t0.Add(30*time.Minute))) })
		redeem("d")
		return tr.moveEarliest("task-1", gen)
	}); err != nil {
		t.Fatal(err)
	}
	if at, ok := mark(); !ok || !at.Equal(t0.Add(30*time.Minute)) {
		t.Errorf("mark after a concurrent issue = %s %v, want d's expiry kept", at, ok)
	}

	// The marks are bounded: with maxCached tasks marked, a read that
	// marks one more task forgets an eighth of the others, each of which
	// then costs a read again.
	s.mirror.mu.Lock()
	delete(s.mirror.earliest, "task-1")
	before := len(s.mirror.earliest)
	for i := range maxCached {
		s.mirror.earliest[fmt.Sprint("other-", i)] = t0
	}
	s.mirror.mu.Unlock()
	due(t0.Add(2 * time.Hour))
	s.mirror.mu.Lock()
	marked := len(s.mirror.earliest)
	s.mirror.mu.Unlock()
	if want := before + maxCached - maxCached/8 + 1; marked != want {
		t.Errorf("after marking one task past the bound: %d tasks marked, want %d", marked, want)
	}
	if at, ok := mark(); !ok || !at.IsZero() {
		t.Errorf("after marking one task past the bound: task-1's mark %s %v, want none outstanding", at, ok)
	}
}
