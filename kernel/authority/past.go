package authority

import (
	"context"
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
	// fold is the ledger folded to until; its state is nil when none is
	// kept.
	fold folded
	// expiry drops the fold kept (pastKept unless set) after its last
	// use, unless a later use (uses counts them) re-armed it.
	expiry *time.Timer
	uses   uint64
	kept   time.Duration
}

// pageAt classifies a page of the items as the ledger stood at until,
// folded as a start-up folds the ledger (see fold), up to the first
// transition after until. The fold is kept for the pages that follow; a
// listing of another instant folds again.
func (l *ledger) pageAt(ctx context.Context, until time.Time, after string, limit int) (page []canon.Classified, more, ok bool, err error) {
	p := &l.past
	p.mu.Lock()
	defer p.mu.Unlock()
	// The fold goes on when the caller stops waiting: at a million tasks
	// it takes minutes, longer than a client's deadline may be, and the
	// call that asks again then finds it done (or waits for its end)
	// instead of starting over.
	ctx = context.WithoutCancel(ctx)
	if p.fold.state == nil || !p.until.Equal(until) {
		began := time.Now()
		p.fold.state = nil
		f, err := l.fold(ctx, until)
		if err != nil {
			return nil, false, false, err
		}
		p.fold, p.until = f, until
		l.log.Info("ledger replayed to a past instant", zap.Time("at", until), zap.Int64("from_journal_position", f.from),
			zap.Int64("to_journal_position", f.seen), zap.Duration("took", time.Since(began)))
	} else if err := l.foldAfter(ctx, &p.fold, until); err != nil {
		// What was appended since does not fold onto the state kept.
		p.fold.state = nil
		return nil, false, false, err
	}
	page, more, ok = canon.ClassifyPage(p.fold.state, l.auth, after, limit)
	p.keep()
	return page, more, ok, nil
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
			p.fold.state = nil
		}
	})
}
