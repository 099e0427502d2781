package authority

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
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
	// seen is the journal position of the last canon transition folded.
	seen int64
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
	if p.state == nil || !p.until.Equal(until) {
		p.state, p.until, p.seen, p.done = &canon.State{}, until, 0, false
		p.state.SetContent(l.content)
	}
	if err := l.foldUntil(ctx, p); err != nil {
		p.state = nil
		return nil, false, false, err
	}
	page, more, ok = canon.ClassifyPage(p.state, l.auth, after, limit)
	p.keep()
	return page, more, ok, nil
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
