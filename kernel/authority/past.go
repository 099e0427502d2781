package authority

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"go.uber.org/zap"
)

// pastKept is how long the ledger folded to a past instant is kept after
// its last page was read: long enough for a client to ask for the next
// page, short enough not to hold a second ledger's memory for long.
const pastKept = 2 * time.Minute

// past is the ledger as it stood at one past instant, folded once for
// every page of a listing rather than once per page. Its mutex also
// serialises past-instant listings, so that at most one past ledger is
// ever held beside the live one.
type past struct {
	mu    sync.Mutex
	until time.Time
	state *canon.State
	// from is the journal position the fold started at: a snapshot's, or
	// 0; seen, that of the last canon transition folded.
	from, seen int64
	// done: a transition after until was read. The journal's transitions
	// are in time order (canon.State refuses an earlier one), so nothing
	// appended later changes the state.
	done bool
	// expiry drops the state kept (pastKept unless set) after its last
	// use, unless a later use (uses counts them) re-armed it.
	expiry *time.Timer
	uses   uint64
	kept   time.Duration
}

// pageAt classifies a page of the items as the ledger stood at until,
// folding the journal's canon transitions up to the first one after until,
// a page of entries at a time with the contracts compacted, as a start-up
// replay does. The state is kept for the pages that follow; a listing of
// another instant folds again.
func (l *ledger) pageAt(ctx context.Context, until time.Time, after string, limit int) (page []canon.Classified, more, ok bool, err error) {
	if l.snaps == nil {
		// A store that reads the journal only whole: fold it whole.
		entries, err := l.reader.EntriesOfKind(ctx, journalKindCanon)
		if err != nil {
			return nil, false, false, fmt.Errorf("replay ledger: %w", err)
		}
		st, err := foldLedger(entries, until, l.auth)
		if err != nil {
			return nil, false, false, err
		}
		page, more, ok = canon.ClassifyPage(st, l.auth, after, limit)
		return page, more, ok, nil
	}
	p := &l.past
	p.mu.Lock()
	defer p.mu.Unlock()
	// The fold goes on when the caller stops waiting: at a million tasks
	// it takes minutes, longer than a client's deadline may be, and the
	// call that asks again then finds it done (or waits for its end)
	// instead of starting over.
	ctx = context.WithoutCancel(ctx)
	fresh, fromSnapshot, began := p.state == nil || !p.until.Equal(until), false, time.Now()
	if fresh {
		p.state, p.seen, fromSnapshot = l.snapshotBefore(ctx, until)
		p.until, p.from, p.done = until, p.seen, false
	}
	err = l.foldUntil(ctx, p)
	if err != nil && fromSnapshot {
		// The journal after the snapshot does not fold onto it: as at
		// start-up, the journal decides.
		l.log.Warn("the journal does not fold onto the ledger snapshot; replaying the whole journal to a past instant", zap.Error(err))
		p.state, p.from, p.seen, p.done = &canon.State{}, 0, 0, false
		p.state.SetContent(l.content)
		err = l.foldUntil(ctx, p)
	}
	if err != nil {
		p.state = nil
		return nil, false, false, err
	}
	if fresh {
		l.log.Info("ledger replayed to a past instant", zap.Time("at", until), zap.Int64("from_journal_position", p.from),
			zap.Int64("to_journal_position", p.seen), zap.Duration("took", time.Since(began)))
	}
	page, more, ok = canon.ClassifyPage(p.state, l.auth, after, limit)
	p.keep()
	return page, more, ok, nil
}

// snapshotBefore returns the newest ledger snapshot all of whose
// transitions happened at or before until, with the journal position it
// was taken at: a fold to until starts from it instead of from the first
// entry. Failing that (the kernel keeps only its last few snapshots), an
// empty state at position 0, and ok false.
func (l *ledger) snapshotBefore(ctx context.Context, until time.Time) (st *canon.State, at int64, ok bool) {
	snaps, err := l.snaps.LedgerSnapshots(ctx, snapshotTries)
	if err != nil {
		l.log.Warn("ledger snapshots unreadable; replaying the whole journal to a past instant", zap.Error(err))
		snaps = nil
	}
	for _, sn := range snaps {
		// A snapshot taken at or before until holds no transition after
		// it, unless clocks differ, which Last catches. One taken later
		// may; skipping it costs only the shortcut.
		if sn.TakenAt.After(until) {
			continue
		}
		sst, err := l.readSnapshot(ctx, sn)
		if err != nil {
			l.log.Warn("ledger snapshot ignored", zap.String("snapshot", sn.ID), zap.Uint64("journal_size", sn.JournalSize), zap.Error(err))
			continue
		}
		if !sst.Last().After(until) {
			return sst, int64(sn.JournalSize), true
		}
	}
	st = &canon.State{}
	st.SetContent(l.content)
	return st, 0, false
}

// foldUntil folds into p.state the canon transitions after p.seen, up to
// the first one after p.until.
func (l *ledger) foldUntil(ctx context.Context, p *past) error {
	for !p.done {
		entries, err := l.snaps.EntriesOfKindAfter(ctx, journalKindCanon, p.seen, foldPage)
		if err != nil {
			return fmt.Errorf("replay ledger: %w", err)
		}
		for _, e := range entries {
			t, err := decodeTransition(e)
			if err != nil {
				return fmt.Errorf("replay ledger: %w", err)
			}
			if t.At.After(p.until) {
				p.done = true
				break
			}
			if err := p.state.Apply(t, l.auth); err != nil {
				return fmt.Errorf("replay ledger: entry %d: %w", e.Seq, err)
			}
			p.seen = e.Seq
		}
		p.state.Compact()
		if len(entries) < foldPage {
			return nil
		}
	}
	return nil
}

// keep (re)arms the state's expiry. The caller holds p.mu.
func (p *past) keep() {
	kept := p.kept
	if kept == 0 {
		kept = pastKept
	}
	if p.expiry != nil {
		p.expiry.Stop()
	}
	p.uses++
	use := p.uses
	p.expiry = time.AfterFunc(kept, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.uses == use {
			p.state = nil
		}
	})
}
