package authority

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
)

// journalKindCanon marks ledger transitions in the journal; replaying them
// in order rebuilds the ledger.
const journalKindCanon = "canon"

// ledger is the authority ledger held in memory: the fold of every canon
// transition in the journal, with each item's class computed once per
// change.
type ledger struct {
	// wmu serialises transitions, from validation to publication, so that
	// memory changes in the journal's commit order.
	wmu sync.Mutex
	// smu guards state, dirty and seen against the two goroutines that
	// change them outside wmu: the store's, folding other replicas'
	// transitions (follow), and a failed transition's caller (restore).
	smu sync.Mutex
	// state is the fold of the committed transitions plus, while a
	// transition's update is in flight, that transition (dirty).
	state *canon.State
	dirty bool
	// seen is the journal position of the last transition in state.
	seen int64
	// reader re-reads the journal when state must be rebuilt.
	reader journal.Reader

	// mu guards what readers see: the classes as of the last commit.
	mu   sync.RWMutex
	auth canon.Authorities
	// version moves with every publication: a decision made outside the
	// writer checks that the classes it read are still the ledger's.
	version atomic.Uint64
	// classes follows state: a publication reclassifies only what the
	// transitions since the previous one changed, so its cost does not
	// grow with the ledger.
	classes *canon.Classes
}

func replayLedger(ctx context.Context, s journal.Reader, auth canon.Authorities) (*ledger, error) {
	entries, err := s.EntriesOfKind(ctx, journalKindCanon)
	if err != nil {
		return nil, fmt.Errorf("replay ledger: %w", err)
	}
	l := &ledger{auth: auth, reader: s}
	st, err := foldLedger(entries, time.Time{}, auth)
	if err != nil {
		return nil, err
	}
	l.set(st)
	if len(entries) > 0 {
		l.seen = entries[len(entries)-1].Seq
	}
	return l, nil
}

// foldLedger decodes the canon transitions among entries (others are
// skipped) and replays those up to until (zero: all of them).
func foldLedger(entries []journal.Entry, until time.Time, auth canon.Authorities) (*canon.State, error) {
	var ts []canon.Transition
	for _, e := range entries {
		if e.Kind != journalKindCanon {
			continue
		}
		t, err := decodeTransition(e)
		if err != nil {
			return nil, fmt.Errorf("replay ledger: %w", err)
		}
		ts = append(ts, t)
	}
	if until.IsZero() && len(ts) > 0 {
		until = ts[len(ts)-1].At
	}
	st, err := canon.Replay(ts, until, auth)
	if err != nil {
		return nil, fmt.Errorf("replay ledger: %w", err)
	}
	return st, nil
}

// decodeTransition reads the canon transition a journal entry records.
func decodeTransition(e journal.Entry) (canon.Transition, error) {
	var p ledgerv1.Transition
	if err := proto.Unmarshal(e.Body, &p); err != nil {
		return canon.Transition{}, fmt.Errorf("ledger entry %d: %w", e.Seq, err)
	}
	t, err := canon.TransitionFromProto(&p)
	if err != nil {
		return canon.Transition{}, fmt.Errorf("ledger entry %d: %w", e.Seq, err)
	}
	return t, nil
}

// set classifies every item of st and makes it the ledger's state.
func (l *ledger) set(st *canon.State) {
	l.state = st
	l.classes = canon.NewClasses(st, l.auth)
}

// item returns an item and its class. The item is shared: callers must not
// modify it.
func (l *ledger) item(id string) (canon.Classified, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.classes.Get(id)
}

// all returns every item in first-recorded order.
func (l *ledger) all() []canon.Classified {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.classes.All()
}

// committer is a write transaction that can run code once it commits.
type committer interface {
	journal.Appender
	OnCommit(func())
}

// apply validates t against the ledger and appends it to the journal in tx.
// Readers see it once tx commits, and not before; the caller holds wmu (see
// Kernel.ledgerUpdate), which restores the state should tx not commit.
func (l *ledger) apply(tx committer, t canon.Transition) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	if err := l.state.Apply(t, l.auth); err != nil {
		return err // Apply leaves the state unchanged
	}
	l.dirty = true
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(t.Proto())
	if err != nil {
		return err
	}
	ref := t.ItemID
	if t.Item != nil {
		ref = t.Item.GetCanonItemId()
	}
	e, err := tx.Append(t.At, journalKindCanon, ref, body)
	if err != nil {
		return err
	}
	tx.OnCommit(func() {
		l.smu.Lock()
		defer l.smu.Unlock()
		l.seen = e.Seq
		l.publish()
	})
	return nil
}

// publish makes the state's classes what readers see. It may follow any
// number of state.Apply calls, and a swap of the state for another. The
// caller holds smu.
func (l *ledger) publish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.classes.Update(l.state)
	l.dirty = false
	l.version.Add(1)
}

// restore reloads the state from the journal after an update that applied a
// transition did not commit. The caller holds wmu, so no transition of this
// kernel commits between the read and the swap.
func (l *ledger) restore(ctx context.Context) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	return l.restoreLocked(ctx)
}

func (l *ledger) restoreLocked(ctx context.Context) error {
	if !l.dirty {
		return nil
	}
	fresh, err := replayLedger(ctx, l.reader, l.auth)
	if err != nil {
		return err
	}
	l.state, l.seen = fresh.state, fresh.seen
	l.publish()
	return nil
}

// follow folds in the transitions other kernel replicas committed to the
// shared journal ([store.Store.Follow]); it runs before this kernel's next
// update, so decisions and transitions always start from the whole ledger.
func (l *ledger) follow(ctx context.Context, entries []journal.Entry) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	// A transition of this kernel that did not commit may still be in
	// state, its caller not yet back to restore it: rebuild first (the
	// rebuild holds the others' transitions too).
	if err := l.restoreLocked(ctx); err != nil {
		return err
	}
	var fresh []journal.Entry
	for _, e := range entries {
		if e.Kind == journalKindCanon && e.Seq > l.seen {
			fresh = append(fresh, e)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	for _, e := range fresh {
		t, err := decodeTransition(e)
		if err != nil {
			return err
		}
		if err := l.state.Apply(t, l.auth); err != nil {
			// The writer validated it against the same ledger: fail
			// closed, and rebuild from the journal on the next try.
			l.dirty = true
			return fmt.Errorf("ledger entry %d: %w", e.Seq, err)
		}
		l.seen = e.Seq
	}
	l.publish()
	return nil
}
