package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ambitkernel/ambit/kernel/store"
)

// TestGroupCommitIsolatesFailures runs many updates at once, so that they
// share transactions: every failing or panicking update leaves nothing
// behind, every other one commits, and the journal stays one valid tree whose committed size the store
// knows.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const n = 64
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Update(ctx, func(tx store.Tx) error {
				if _, err := tx.Append(t0, "test", fmt.Sprintf("job-%02d", i), nil); err != nil {
					return err
				}
				if err := tx.BindTask(fmt.Sprintf("task-%02d", i), store.Task{ItemID: "item", Agent: "agent"}, t0); err != nil {
					return err
				}
				switch i % 8 {
				case 3:
					return errBoom
				case 5:
					panic("job panics")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	committed := map[string]bool{}
	for i, err := range errs {
		switch i % 8 {
		case 3:
			if !errors.Is(err, errBoom) {
				t.Errorf("job %d: %v, want its own error", i, err)
			}
		case 5:
			if err == nil {
				t.Errorf("job %d panicked but reported success", i)
			}
		default:
			if err != nil {
				t.Errorf("job %d: %v", i, err)
			}
			committed[fmt.Sprintf("job-%02d", i)] = true
		}
	}
	entries, err := s.Entries(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.VerifyJournal(ctx, nil); err != nil || !r.OK {
		t.Fatalf("journal after group commits: %+v, %v", r, err)
	}
	if len(entries) != len(committed) || s.JournalSize() != uint64(len(committed)) {
		t.Errorf("%d journal entries, size %d, want %d", len(entries), s.JournalSize(), len(committed))
	}
	for _, e := range entries {
		if !committed[e.Ref] {
			t.Errorf("entry %s of a failed update was committed", e.Ref)
		}
	}
	view(t, s, func(tx store.Tx) error {
		for i := range n {
			_, err := tx.Task(fmt.Sprintf("task-%02d", i))
			if bound := err == nil; bound != (i%8 != 3 && i%8 != 5) {
				t.Errorf("task-%02d bound = %v (%v)", i, bound, err)
			}
		}
		return nil
	})
}

// TestUpdateWithCancelledContext never runs an update whose caller is gone.
func TestUpdateWithCancelledContext(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := s.Update(ctx, func(store.Tx) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Errorf("Update = %v, ran %v; want Canceled without running", err, ran)
	}
}

// TestUpdateAloneAndOnCommit: an update run alone shares no transaction,
// its commit hooks run before it returns and before any later update
// starts, and a rolled-back update's hooks never run.
func TestUpdateAloneAndOnCommit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var events []string
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }

	err := s.UpdateAlone(ctx, func(tx store.Tx) error {
		tx.OnCommit(func() { note("rolled back hook ran") })
		return errors.New("refused")
	})
	if err == nil {
		t.Fatal("a failing update reported success")
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			update := s.Update
			if i%4 == 0 {
				update = s.UpdateAlone
			}
			err := update(ctx, func(tx store.Tx) error {
				note(fmt.Sprintf("run %d", i))
				if i%4 == 0 {
					tx.OnCommit(func() { note(fmt.Sprintf("commit %d", i)) })
				}
				_, err := tx.Append(t0, "test", fmt.Sprintf("job-%02d", i), nil)
				return err
			})
			if err != nil {
				t.Errorf("update %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	// Each alone update's hook directly follows its own run: nothing ran in
	// its transaction, and nothing started before its hook.
	for i, e := range events {
		if e == "rolled back hook ran" {
			t.Fatalf("the hook of a rolled-back update ran")
		}
		var n int
		if _, err := fmt.Sscanf(e, "commit %d", &n); err == nil {
			if i == 0 || events[i-1] != fmt.Sprintf("run %d", n) {
				t.Errorf("hook of update %d at %d follows %q, want its own run: %v", n, i, events[i-1], events)
			}
		}
	}
	if len(events) != 32+8 {
		t.Errorf("%d events, want 40: %v", len(events), events)
	}
}

// TestObserveCommits: the observer hears of each commit with the updates
// it stored, and a batch whose updates all failed commits nothing to hear
// of.
func TestObserveCommits(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var commits []store.Commit
	s.ObserveCommits(func(c store.Commit) {
		mu.Lock()
		defer mu.Unlock()
		commits = append(commits, c)
	})
	heard := func() (n, updates int) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range commits {
			if c.Took <= 0 || c.Updates < 1 {
				t.Errorf("commit heard as %+v", c)
			}
			updates += c.Updates
		}
		return len(commits), updates
	}
	errBoom := errors.New("boom")
	if err := s.Update(ctx, func(tx store.Tx) error { return errBoom }); !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	if n, _ := heard(); n != 0 {
		t.Fatalf("a failed update alone was heard as %d commits", n)
	}
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_ = s.Update(ctx, func(tx store.Tx) error {
				if _, err := tx.Append(t0, "test", fmt.Sprintf("job-%02d", i), nil); err != nil {
					return err
				}
				if i%4 == 0 {
					return errBoom
				}
				return nil
			})
		})
	}
	wg.Wait()
	if got, updates := heard(); got < 1 || got > n || updates != n-n/4 {
		t.Errorf("heard %d commits of %d updates, want %d updates", got, updates, n-n/4)
	}
}
