package authority

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/store"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// journalKindCanon marks ledger transitions in the journal; replaying them
// in order rebuilds the ledger.
const journalKindCanon = journal.ReplayedKind

// ledger is the authority ledger held in memory: the fold of every canon
// transition in the journal, with each item's class computed once per
// change.
type ledger struct {
	// wmu serialises transitions, from validation to publication, so that
	// memory changes in the journal's commit order.
	wmu sync.Mutex
	// smu guards state, dirty, seen, since and writing against the
	// goroutines that change them outside wmu: the store's, folding other
	// replicas' transitions (follow), a failed transition's caller
	// (restore), and the snapshot writer.
	smu sync.Mutex
	// state is the fold of the committed transitions plus, while a
	// transition's update is in flight, that transition (dirty).
	state *canon.State
	dirty bool
	// seen is the journal position of the last transition in state.
	seen int64
	// snaps keeps snapshots of the ledger and reads the journal by page and
	// by item.
	snaps snapshotStore
	log   *zap.Logger
	now   func() time.Time
	// every is how many transitions are folded between two snapshots
	// written in the background (none when <= 0); since counts them, and
	// writing is set while a snapshot is written.
	every   int
	since   int
	writing bool
	closed  bool
	bg      sync.WaitGroup

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

	// past is the ledger folded to the instant a listing last asked for.
	past past
}

// snapshotStore is what the ledger needs of a store to start from a
// snapshot, keep contracts out of memory and write snapshots:
// [store.Store] is one.
type snapshotStore interface {
	EntriesOfKindAfter(ctx context.Context, kind string, after int64, limit int) ([]journal.Entry, error)
	EntriesWithRefs(ctx context.Context, refs []string, kinds ...string) ([]journal.Entry, error)
	JournalRootAt(ctx context.Context, size uint64) ([]byte, error)
	LedgerSnapshots(ctx context.Context, limit int) ([]store.LedgerSnapshot, error)
	ReadLedgerSnapshot(ctx context.Context, sn store.LedgerSnapshot) io.ReadCloser
	WriteLedgerSnapshot(ctx context.Context, size uint64, root []byte, at time.Time, body io.Reader) (store.LedgerSnapshot, error)
}

var _ snapshotStore = (*store.Store)(nil)

const (
	// DefaultSnapshotEvery is how many ledger transitions a kernel folds
	// between two snapshots unless told otherwise.
	DefaultSnapshotEvery = 10_000
	// snapshotTries is how many of the newest snapshots start-up tries
	// before it replays the whole journal.
	snapshotTries = 3
	// foldPage is how many journal entries a fold decodes at once, so that
	// a replay of a long journal never holds all of it.
	foldPage = 10_000
)

// newLedger loads the ledger: from the newest snapshot that matches the
// journal plus the transitions after it, or by replaying the whole journal.
func newLedger(ctx context.Context, snaps snapshotStore, auth canon.Authorities, log *zap.Logger, now func() time.Time, every int) (*ledger, error) {
	l := &ledger{auth: auth, snaps: snaps, log: log, now: now, every: every}
	f, err := l.fold(ctx, time.Time{})
	if err != nil {
		return nil, err
	}
	l.set(f.state)
	l.seen = f.seen
	return l, nil
}

// folded is the ledger folded from a journal position (a snapshot's, or
// 0) to another (seen, that of its last transition). done: a transition
// after the instant folded to was read, so nothing appended later
// changes the state.
type folded struct {
	state      *canon.State
	from, seen int64
	done       bool
}

// fold folds the journal into a new state as it stood at until (zero:
// now): from the newest snapshot that matches the journal and holds no
// transition after until, else from the journal's first entry.
func (l *ledger) fold(ctx context.Context, until time.Time) (folded, error) {
	if st, at := l.fromSnapshot(ctx, until); st != nil {
		f := folded{state: st, from: at, seen: at}
		err := l.foldAfter(ctx, &f, until)
		if err == nil {
			return f, nil
		}
		// The journal after the snapshot does not fold onto it: whichever
		// is wrong, the journal decides.
		l.log.Warn("the journal does not fold onto the ledger snapshot; "+replaying(until), zap.Int64("journal_size", at), zap.Error(err))
	}
	f := folded{state: &canon.State{}}
	f.state.SetContent(l.content)
	if err := l.foldAfter(ctx, &f, until); err != nil {
		return folded{}, err
	}
	return f, nil
}

// fromSnapshot reads the newest snapshot that matches the journal and,
// when until is set, holds no transition after it, and the journal
// position it was taken at. Nil when there is none: a snapshot is only
// ever a shortcut, so one that does not match is skipped with a warning,
// never trusted and never a reason not to start.
func (l *ledger) fromSnapshot(ctx context.Context, until time.Time) (*canon.State, int64) {
	snaps, err := l.snaps.LedgerSnapshots(ctx, snapshotTries)
	if err != nil {
		l.log.Warn("ledger snapshots unreadable; "+replaying(until), zap.Error(err))
		return nil, 0
	}
	unreadable := 0
	for _, sn := range snaps {
		// A snapshot taken at or before until holds no transition after
		// it, unless clocks differ, which Last catches. One taken later
		// may; skipping it costs only the shortcut.
		if !until.IsZero() && sn.TakenAt.After(until) {
			continue
		}
		st, err := l.readSnapshot(ctx, sn)
		if err != nil {
			unreadable++
			l.log.Warn("ledger snapshot ignored", zap.String("snapshot", sn.ID), zap.Uint64("journal_size", sn.JournalSize), zap.Error(err))
			continue
		}
		if until.IsZero() || !st.Last().After(until) {
			return st, int64(sn.JournalSize)
		}
	}
	if unreadable > 0 && unreadable == len(snaps) {
		l.log.Warn("no ledger snapshot matches the journal; " + replaying(until))
	}
	return nil, 0
}

// replaying says, in a warning, what a fold to until falls back to.
func replaying(until time.Time) string {
	if until.IsZero() {
		return "replaying the whole journal"
	}
	return "replaying the whole journal to a past instant"
}

// readSnapshot reads sn once it is shown to follow this journal: the
// journal holds at least sn's entries and its root over them is sn's, and
// the body is the one written.
func (l *ledger) readSnapshot(ctx context.Context, sn store.LedgerSnapshot) (*canon.State, error) {
	root, err := l.snaps.JournalRootAt(ctx, sn.JournalSize)
	if err != nil {
		return nil, fmt.Errorf("the journal does not reach position %d: %w", sn.JournalSize, err)
	}
	if !bytes.Equal(root, sn.Root) {
		return nil, fmt.Errorf("taken over another journal: its root at %d is %x, the journal's %x", sn.JournalSize, sn.Root, root)
	}
	h := sha256.New()
	body := l.snaps.ReadLedgerSnapshot(ctx, sn)
	defer body.Close()
	st, err := canon.ReadSnapshot(io.TeeReader(body, h), l.auth, l.content)
	if err != nil {
		return nil, err
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, sn.Digest) {
		return nil, fmt.Errorf("its body hashes to %x, not the recorded %x", sum, sn.Digest)
	}
	return st, nil
}

// foldAfter folds into f.state the canon transitions after f.seen, a
// page at a time, compacting each page's contracts once folded (they are
// durable in the journal), up to the first one after until (zero: all of
// them).
func (l *ledger) foldAfter(ctx context.Context, f *folded, until time.Time) error {
	for !f.done {
		entries, err := l.snaps.EntriesOfKindAfter(ctx, journalKindCanon, f.seen, foldPage)
		if err != nil {
			return fmt.Errorf("replay ledger: %w", err)
		}
		for _, e := range entries {
			t, err := decodeTransition(e)
			if err != nil {
				return fmt.Errorf("replay ledger: %w", err)
			}
			if !until.IsZero() && t.At.After(until) {
				f.done = true
				break
			}
			if err := f.state.Apply(t, l.auth); err != nil {
				return fmt.Errorf("replay ledger: entry %d: %w", e.Seq, err)
			}
			f.seen = e.Seq
		}
		f.state.Compact()
		if len(entries) < foldPage {
			return nil
		}
	}
	return nil
}

// content loads a compacted contract from the journal: the contract of
// the item's proposal, or the one its handoff derived from its parent's.
// The caller checks it against the item's content hash.
func (l *ledger) content(id string) (*contractv1.Contract, error) {
	entries, err := l.snaps.EntriesWithRefs(context.Background(), []string{id}, journalKindCanon)
	if err != nil {
		return nil, err
	}
	return l.contentIn(id, entries)
}

// contentIn is content, of the canon entries with the item's ref.
func (l *ledger) contentIn(id string, entries []journal.Entry) (*contractv1.Contract, error) {
	for _, e := range entries {
		t, err := decodeTransition(e)
		if err != nil {
			return nil, err
		}
		if t.Item.GetCanonItemId() != id {
			continue
		}
		switch t.Kind {
		case canon.Propose:
			if c := t.Item.GetContract(); c != nil {
				return c, nil
			}
		case canon.DeriveHandoff:
			parent, err := l.content(t.ItemID)
			if err != nil {
				return nil, fmt.Errorf("handoff parent %q: %w", t.ItemID, err)
			}
			return canon.Intersect(parent, t.Filter)
		}
	}
	return nil, fmt.Errorf("no contract of item %q in the journal", id)
}

// contract returns a contract item with its contract, loading a compacted
// one from the journal.
func (l *ledger) contract(item *ledgerv1.CanonItem) (*ledgerv1.CanonItem, error) {
	return l.contractFrom(item, l.content)
}

// contractFrom is contract, loading a compacted contract with content.
func (l *ledger) contractFrom(item *ledgerv1.CanonItem, content canon.ContentFunc) (*ledgerv1.CanonItem, error) {
	if !canon.Compacted(item) {
		return item, nil
	}
	c, err := content(item.GetCanonItemId())
	if err != nil {
		return nil, fmt.Errorf("item %q: load its contract: %w", item.GetCanonItemId(), err)
	}
	return canon.WithContent(item, c)
}

// filled returns c with its contract, as clients are shown an item; an item
// whose contract cannot be loaded is returned as it is held, and logged.
func (l *ledger) filled(c canon.Classified) canon.Classified {
	return l.filledFrom(c, l.content)
}

// filledFrom is filled, loading a compacted contract with content.
func (l *ledger) filledFrom(c canon.Classified, content canon.ContentFunc) canon.Classified {
	full, err := l.contractFrom(c.Item, content)
	if err != nil {
		l.log.Error("ledger item shown without its contract", zap.String("item", c.Item.GetCanonItemId()), zap.Error(err))
		return c
	}
	c.Item = full
	return c
}

// fill is filled of each item of a page, whose compacted contracts are
// read from the journal together: one statement for a page instead of one
// an item. Only that read failing fails it.
func (l *ledger) fill(ctx context.Context, page []canon.Classified) error {
	var ids []string
	for _, c := range page {
		if canon.Compacted(c.Item) {
			ids = append(ids, c.Item.GetCanonItemId())
		}
	}
	if len(ids) == 0 {
		return nil
	}
	entries, err := l.snaps.EntriesWithRefs(ctx, ids, journalKindCanon)
	if err != nil {
		return fmt.Errorf("load the page's contracts: %w", err)
	}
	byRef := make(map[string][]journal.Entry, len(ids))
	for _, e := range entries {
		byRef[e.Ref] = append(byRef[e.Ref], e)
	}
	content := func(id string) (*contractv1.Contract, error) { return l.contentIn(id, byRef[id]) }
	for i, c := range page {
		page[i] = l.filledFrom(c, content)
	}
	return nil
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

// page returns a page of the items as last published (see
// [canon.Classes.Page]).
func (l *ledger) page(after string, limit int) ([]canon.Classified, bool, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.classes.Page(after, limit)
}

// requests returns the boundary-change requests with provenance ref, with
// their classes as last published.
func (l *ledger) requests(ref string) []canon.Classified {
	l.smu.Lock()
	ids := l.state.BoundaryRequests(ref)
	l.smu.Unlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]canon.Classified, 0, len(ids))
	for _, id := range ids {
		// An item of a transition not yet published is not there yet.
		if c, ok := l.classes.Get(id); ok {
			out = append(out, c)
		}
	}
	return out
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
		l.folded(1)
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
	f, err := l.fold(ctx, time.Time{})
	if err != nil {
		return err
	}
	l.state, l.seen = f.state, f.seen
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
	l.folded(len(fresh))
	return nil
}
