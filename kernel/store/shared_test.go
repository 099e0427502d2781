package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// TestReplicasShareOneJournal runs two stores (two kernel replicas) on one
// PostgreSQL database: their concurrent appends form one journal in one
// order that verifies, each store's followers receive exactly the entries
// the other committed, in order, and a capability is redeemed once across
// both.
func TestReplicasShareOneJournal(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	a, b := open(t, dsn), open(t, dsn)
	var mu sync.Mutex
	seen := map[string][]string{}
	for name, s := range map[string]*store.Store{"a": a, "b": b} {
		s.Follow(func(_ context.Context, es []journal.Entry) error {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range es {
				seen[name] = append(seen[name], e.Ref)
			}
			return nil
		})
	}

	const each = 60
	var wg sync.WaitGroup
	for name, s := range map[string]*store.Store{"a": a, "b": b} {
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.Update(ctx, func(tx store.Tx) error {
					_, err := tx.Append(t0, "test", fmt.Sprintf("%s-%02d", name, i), nil)
					return err
				}); err != nil {
					t.Errorf("%s update %d: %v", name, i, err)
				}
			}()
		}
	}
	wg.Wait()

	es, err := a.Entries(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2*each {
		t.Fatalf("%d entries, want %d", len(es), 2*each)
	}
	rep, err := b.VerifyJournal(ctx, nil)
	if err != nil || !rep.OK || rep.Entries != 2*each {
		t.Fatalf("VerifyJournal = %+v, %v", rep, err)
	}
	// Both catch up with the head (the other's announcement, or a read).
	for _, s := range []*store.Store{a, b} {
		if err := s.View(ctx, func(store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if s.JournalSize() != 2*each {
			t.Errorf("JournalSize = %d, want %d", s.JournalSize(), 2*each)
		}
	}
	mu.Lock()
	for name, other := range map[string]string{"a": "b", "b": "a"} {
		var want []string
		for _, e := range es {
			if e.Ref[:1] == other {
				want = append(want, e.Ref)
			}
		}
		if !slices.Equal(seen[name], want) {
			t.Errorf("%s followed %v, want the other's entries in journal order %v", name, seen[name], want)
		}
	}
	mu.Unlock()

	// One capability, redeemed through both at once: one wins.
	update(t, a, func(tx store.Tx) error {
		return tx.InsertCapability(capability("cap-1", "task-1", "claims/1", agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, t0))
	})
	var won sync.Map
	for name, s := range map[string]*store.Store{"a": a, "b": b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Update(ctx, func(tx store.Tx) error {
				c, err := tx.Capability("cap-1")
				if err != nil || c.Status != agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED {
					return err
				}
				c.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
				c.Holder = name
				if err := tx.UpdateCapability(c); err != nil {
					return err
				}
				won.Store(name, true)
				return nil
			})
		}()
	}
	wg.Wait()
	n := 0
	won.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d replicas redeemed the capability, want 1", n)
	}
}

// TestReplicaSeesCommitsAtOnce: a commit on one replica reaches the
// other's followers without any write of its own, through the announcement.
func TestReplicaSeesCommitsAtOnce(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := open(t, dsn), open(t, dsn)
	got := make(chan string, 8)
	b.Follow(func(_ context.Context, es []journal.Entry) error {
		for _, e := range es {
			got <- e.Ref
		}
		return nil
	})
	update(t, a, func(tx store.Tx) error {
		_, err := tx.Append(t0, "test", "from-a", nil)
		return err
	})
	select {
	case ref := <-got:
		if ref != "from-a" {
			t.Errorf("followed %q", ref)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica did not follow the commit within 10s")
	}
}
