package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// background runs an SQLite store's work off the writer's path (its
// checkpoints, the moves of pending capabilities) every period until
// closed. Commits do not wait for this work, so a failure is reported to
// a hook and the next tick tries again.
type background struct {
	stop    chan struct{}
	stopped sync.Once
	done    sync.WaitGroup
	// failed, when set, hears of each tick's work that failed.
	failed atomic.Pointer[func(error)]
}

// startBackground runs work every period until close.
func startBackground(every time.Duration, work func() error) *background {
	b := &background{stop: make(chan struct{})}
	b.done.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				if err := work(); err != nil {
					if f := b.failed.Load(); f != nil {
						(*f)(err)
					}
				}
			}
		}
	})
	return b
}

// onError has f hear of each tick's work that fails.
func (b *background) onError(f func(error)) { b.failed.Store(&f) }

// close stops the work and waits for its last tick; a store may be closed
// more than once.
func (b *background) close() {
	b.stopped.Do(func() { close(b.stop) })
	b.done.Wait()
}
