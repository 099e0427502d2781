package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

func batchCapability(id string) Capability {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	return Capability{
		CapabilityID: id, DecisionID: "dec-" + id, TaskID: "task", Record: "claims_db/C-1", StateVersion: "v1",
		IdempotencyKey: "idem-" + id, Tool: "refund", Currency: "GBP", AmountMinor: 100,
		Status: agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, IssuedAt: at, ExpiresAt: at.Add(time.Hour),
	}
}

// runUpdates runs fns as one batch, in order, and returns each one's
// result and transaction.
func runUpdates(s *Store, fns ...func(tx Tx) error) ([]error, []*txn) {
	txs := make([]*txn, len(fns))
	batch := make([]*job, len(fns))
	for i, fn := range fns {
		batch[i] = &job{ctx: context.Background(), done: make(chan error, 1), fn: func(tx Tx) error {
			txs[i] = tx.(*txn)
			return fn(tx)
		}}
	}
	s.runBatch(batch)
	errs := make([]error, len(fns))
	for i, j := range batch {
		errs[i] = <-j.done
	}
	return errs, txs
}

func capabilityIDs(t *testing.T, tx Tx) []string {
	t.Helper()
	cs, err := tx.Capabilities("task")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.CapabilityID)
	}
	return ids
}

// TestBatchDefersCapabilities: a batch stores its updates' capability rows
// together, yet every statement sees every row written before it, a failed
// update leaves none of its rows, and an update that runs no statement
// opens no savepoint.
func TestBatchDefersCapabilities(t *testing.T) {
	s := openFresh(t)
	errBoom := errors.New("boom")
	var seenByC, seenByE []string
	errs, txs := runUpdates(s,
		func(tx Tx) error { return tx.InsertCapability(batchCapability("cap-a")) },
		func(tx Tx) error {
			if err := tx.InsertCapability(batchCapability("cap-b")); err != nil {
				return err
			}
			return errBoom
		},
		func(tx Tx) error {
			if err := tx.InsertCapability(batchCapability("cap-c")); err != nil {
				return err
			}
			// Its own row and cap-a's are stored before it reads.
			seenByC = capabilityIDs(t, tx)
			return errBoom
		},
		func(tx Tx) error { return tx.InsertCapability(batchCapability("cap-d")) },
		func(tx Tx) error {
			seenByE = capabilityIDs(t, tx)
			return nil
		},
	)
	if want := []error{nil, errBoom, errBoom, nil, nil}; !slices.EqualFunc(errs, want, func(a, b error) bool { return errors.Is(a, b) }) {
		t.Fatalf("results %v, want %v", errs, want)
	}
	if want := []string{"cap-a", "cap-c"}; !slices.Equal(seenByC, want) {
		t.Errorf("the third update read %v, want %v", seenByC, want)
	}
	if want := []string{"cap-a", "cap-d"}; !slices.Equal(seenByE, want) {
		t.Errorf("the fifth update read %v, want %v", seenByE, want)
	}
	for i, want := range []bool{false, false, true, false, true} {
		if txs[i].savepoint != want {
			t.Errorf("update %d opened a savepoint: %v, want %v", i, txs[i].savepoint, want)
		}
	}
	if err := s.View(context.Background(), func(tx Tx) error {
		if got, want := capabilityIDs(t, tx), []string{"cap-a", "cap-d"}; !slices.Equal(got, want) {
			t.Errorf("committed %v, want %v", got, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if count, sum, err := s.Usage(context.Background(), "task", "GBP"); err != nil || count != 2 || sum != 200 {
		t.Errorf("usage %d, %d, %v; want the two committed capabilities", count, sum, err)
	}
}

// TestBatchFailsWithItsDeferredRows: a row deferred by an update that
// succeeded and that cannot be stored fails every update of its batch, and
// nothing of the batch commits; one that cannot be stored before its own
// update's next statement fails that update alone.
func TestBatchFailsWithItsDeferredRows(t *testing.T) {
	s := openFresh(t)
	if errs, _ := runUpdates(s, func(tx Tx) error { return tx.InsertCapability(batchCapability("cap-a")) }); errs[0] != nil {
		t.Fatal(errs[0])
	}
	again := func(tx Tx) error { return tx.InsertCapability(batchCapability("cap-a")) }
	bind := func(tx Tx) error { return tx.BindTask("task-2", Task{ItemID: "item", Agent: "agent"}, time.Now()) }
	appendEntry := func(tx Tx) error {
		_, err := tx.Append(time.Now(), "test", "entry", nil)
		return err
	}
	for _, tc := range []struct {
		name string
		fns  []func(tx Tx) error
	}{
		{"stored before a later update's statement", []func(tx Tx) error{again, bind, appendEntry}},
		{"stored at the end of the batch", []func(tx Tx) error{bind, again, appendEntry}},
		{"alone", []func(tx Tx) error{again}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := s.JournalSize()
			errs, _ := runUpdates(s, tc.fns...)
			for i, err := range errs {
				if err == nil {
					t.Errorf("update %d succeeded in a batch whose row could not be stored", i)
				}
			}
			if bound(t, s, "task-2") {
				t.Error("a task was bound in a failed batch")
			}
			if s.JournalSize() != size {
				t.Errorf("the journal grew from %d to %d in a failed batch", size, s.JournalSize())
			}
		})
	}
	// Stored before the update's own statement, inside its savepoint: it
	// fails alone, even though it ignores that statement's error.
	size := s.JournalSize()
	errs, _ := runUpdates(s, func(tx Tx) error {
		if err := again(tx); err != nil {
			return err
		}
		_, _ = tx.Task("task-1")
		return bind(tx)
	}, appendEntry)
	if errs[0] == nil || errs[1] != nil {
		t.Errorf("results %v, want the update whose row could not be stored to fail alone", errs)
	}
	if s.JournalSize() != size+1 {
		t.Errorf("the journal grew from %d to %d, want the other update's entry", size, s.JournalSize())
	}
	if bound(t, s, "task-2") {
		t.Error("the failed update bound its task")
	}
	if count, _, err := s.Usage(context.Background(), "task", "GBP"); err != nil || count != 1 {
		t.Errorf("usage counts %d (%v), want the one committed capability", count, err)
	}
}

// bound reports whether task is bound in what s committed.
func bound(t *testing.T, s *Store, task string) bool {
	t.Helper()
	var err error
	if verr := s.View(context.Background(), func(tx Tx) error {
		_, err = tx.Task(task)
		return nil
	}); verr != nil {
		t.Fatal(verr)
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestCapabilityInsertedOnlyInAnUpdate: a read transaction refuses to
// insert a capability rather than drop its row.
func TestCapabilityInsertedOnlyInAnUpdate(t *testing.T) {
	s := openFresh(t)
	err := s.View(context.Background(), func(tx Tx) error { return tx.InsertCapability(batchCapability("cap-a")) })
	if err == nil || !strings.Contains(err.Error(), "outside an update") {
		t.Errorf("InsertCapability in a view = %v, want it refused", err)
	}
}
