package store

import (
	"context"
	"database/sql"
	"runtime"
	"sync"
	"testing"
)

// TestLeaderGathersRunnableUpdates starts updates on one thread: the
// first to lead lets the others reach the queue before it takes its
// batch, so they share its transaction rather than committing one after
// another.
func TestLeaderGathersRunnableUpdates(t *testing.T) {
	s := openFresh(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const updates = 16
	var mu sync.Mutex
	txs := map[*sql.Tx]bool{}
	var wg sync.WaitGroup
	for range updates {
		wg.Go(func() {
			err := s.Update(context.Background(), func(tx Tx) error {
				mu.Lock()
				defer mu.Unlock()
				txs[tx.(*txn).tx] = true
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// One, unless the collector or the runtime preempted an update.
	if len(txs) > 2 {
		t.Errorf("%d updates ran in %d transactions, want one or two", updates, len(txs))
	}
}
