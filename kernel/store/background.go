package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// background runs an SQLite store's work off the writer's path (its
// checkpoints, the moves of pending capabilities) every period, or sooner
// when woken, until closed. Commits do not wait for this work, so a
// failure is reported to a hook and the next run tries again.
type background struct {
	stop    chan struct{}
	soon    chan struct{} // runs the work without waiting for the tick
	stopped sync.Once
	done    sync.WaitGroup
	// failed, when set, hears of each run's work that failed.
	failed atomic.Pointer[func(error)]
}

// startBackground runs work every period until close.
func startBackground(every time.Duration, work func() error) *background {
	b := &background{stop: make(chan struct{}), soon: make(chan struct{}, 1)}
	b.done.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
			case <-b.soon:
			}
			if err := work(); err != nil {
				if f := b.failed.Load(); f != nil {
					(*f)(err)
				}
			}
		}
	})
	return b
}

// wake has the work run now rather than at the next tick; a wake while
// one is waiting adds nothing.
func (b *background) wake() {
	select {
	case b.soon <- struct{}{}:
	default:
	}
}

// onError has f hear of each run's work that fails.
func (b *background) onError(f func(error)) { b.failed.Store(&f) }

// close stops the work and waits for its last tick; a store may be closed
// more than once.
func (b *background) close() {
	b.stopped.Do(func() { close(b.stop) })
	b.done.Wait()
}
