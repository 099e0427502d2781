package authority

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
)

// Snapshots are written beside the decision path, never on it: every so
// many folded transitions a goroutine copies the ledger's facts (a short
// hold of smu, which only ledger transitions and replicas' catch-up take),
// then encodes and stores them in transactions of their own. Several
// kernel replicas sharing a database may each write them; each snapshot
// names the journal prefix it follows and is checked against it on load,
// so any one of them that matches is as good as another.

// folded counts n transitions folded into the published state and starts
// a snapshot in the background when enough have been. The caller holds
// smu.
func (l *ledger) folded(n int) {
	l.since += n
	if l.every <= 0 || l.since < l.every || l.writing || l.closed {
		return
	}
	l.writing = true
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		if err := l.snapshot(context.Background()); err != nil {
			l.log.Warn("ledger snapshot not written", zap.Error(err))
		}
	}()
}

// snapshot writes a snapshot of the committed ledger. It waits for a
// transition in flight to commit or roll back, because a snapshot holds
// committed transitions only.
func (l *ledger) snapshot(ctx context.Context) error {
	defer func() {
		l.smu.Lock()
		l.writing = false
		l.smu.Unlock()
	}()
	l.smu.Lock()
	if err := l.waitWhile(ctx, func() bool { return l.dirty }); err != nil {
		return err
	}
	snap, seen, since := l.state.Snapshot(), l.seen, l.since
	l.since = 0
	l.smu.Unlock()
	if seen == 0 {
		return nil
	}
	root, err := l.snaps.JournalRootAt(ctx, uint64(seen))
	if err != nil {
		l.unfold(since)
		return fmt.Errorf("ledger snapshot at %d: %w", seen, err)
	}
	pr, pw := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		err := snap.WriteTo(pw, l.auth)
		pw.CloseWithError(err)
		encoded <- err
	}()
	sn, err := l.snaps.WriteLedgerSnapshot(ctx, uint64(seen), root, l.now(), pr)
	pr.CloseWithError(errors.New("ledger snapshot: the store stopped reading"))
	err = errors.Join(err, <-encoded)
	if err != nil {
		l.unfold(since)
		return err
	}
	l.log.Info("ledger snapshot written", zap.String("snapshot", sn.ID), zap.Uint64("journal_size", sn.JournalSize),
		zap.Int("items", snap.Len()), zap.Int("chunks", sn.Chunks))
	return nil
}

// waitWhile polls busy, which reads what smu guards, until it is false,
// releasing smu between looks. The caller holds smu; it still does on a
// nil return, and does not when ctx ended first.
func (l *ledger) waitWhile(ctx context.Context, busy func() bool) error {
	for busy() {
		l.smu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		l.smu.Lock()
	}
	return nil
}

// unfold counts the transitions of a snapshot that was not written as
// not yet snapshotted, so that the next fold tries again.
func (l *ledger) unfold(n int) {
	l.smu.Lock()
	defer l.smu.Unlock()
	l.since += n
}

// Snapshot writes a snapshot of the ledger as committed now, from which a
// kernel over the same journal starts without replaying what it holds.
func (k *Kernel) Snapshot(ctx context.Context) error {
	l := k.ledger
	l.smu.Lock()
	if err := l.waitWhile(ctx, func() bool { return l.writing }); err != nil {
		return err
	}
	l.writing = true
	l.smu.Unlock()
	return l.snapshot(ctx)
}

// Close stops writing snapshots in the background, waits for the one
// being written, and writes a last one when transitions were folded
// since, so that the next start folds none of them. The store stays open.
func (k *Kernel) Close(ctx context.Context) error {
	l := k.ledger
	l.smu.Lock()
	l.closed = true
	l.smu.Unlock()
	l.bg.Wait()
	l.smu.Lock()
	due := l.every > 0 && l.since > 0
	l.smu.Unlock()
	if !due {
		return nil
	}
	return k.Snapshot(ctx)
}
