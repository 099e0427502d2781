package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// On an exclusive store a new capability is first written to
// capabilities_pending, a table that no index but its key's keeps, and is
// moved to capabilities, with their indexes by task and by record, in a
// later commit: a decision's commit then writes one b-tree page for its
// capability instead of three. Readers see both tables through the
// all_capabilities view, in one snapshot, so a capability is never
// missing or seen twice, and a crash loses nothing: a pending row is as
// durable as any other. Before a capability changes, it is moved
// (UpdateCapability); the rest move in the background (mover), a commit
// of their own every moveEvery while any wait. A store that replicas
// share writes capabilities directly.

// moveEvery is how often the background moves pending capabilities.
const moveEvery = 100 * time.Millisecond

// pendingColumns are the columns a pending capability keeps: all of a
// capability's.
const pendingColumns = capabilityColumns

var (
	// moveOneQuery and dropOneQuery move one pending capability, if it is
	// pending.
	moveOneQuery = `INSERT INTO capabilities (` + capabilityColumns + `) SELECT ` + pendingColumns + ` FROM capabilities_pending WHERE capability_id = ?`
	dropOneQuery = `DELETE FROM capabilities_pending WHERE capability_id = ?`
	// moveAllQuery and dropAllQuery move every pending capability.
	moveAllQuery = `INSERT INTO capabilities (` + capabilityColumns + `) SELECT ` + pendingColumns + ` FROM capabilities_pending`
	dropAllQuery = `DELETE FROM capabilities_pending`
)

// moveCapability moves capability id from the pending table to
// capabilities, if it is there, so that it can change.
func (t *txn) moveCapability(id string) error {
	if t.s.pg != nil {
		return nil
	}
	res, err := t.ExecContext(t.ctx, moveOneQuery, id)
	if err != nil {
		return fmt.Errorf("move capability %q: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	if _, err := t.ExecContext(t.ctx, dropOneQuery, id); err != nil {
		return fmt.Errorf("move capability %q: %w", id, err)
	}
	return nil
}

// moveCapabilities moves every pending capability to capabilities.
func (t *txn) moveCapabilities() error {
	if _, err := t.ExecContext(t.ctx, moveAllQuery); err != nil {
		return fmt.Errorf("move pending capabilities: %w", err)
	}
	if _, err := t.ExecContext(t.ctx, dropAllQuery); err != nil {
		return fmt.Errorf("move pending capabilities: %w", err)
	}
	return nil
}

// mover moves pending capabilities in the background.
type mover struct {
	stop   chan struct{}
	once   sync.Once
	done   sync.WaitGroup
	failed atomic.Pointer[func(error)]
}

// startMover moves s's pending capabilities every moveEvery while any
// wait, as a read connection sees. A move that fails leaves them pending,
// where readers see them, for the next to try.
func startMover(s *Store) *mover {
	m := &mover{stop: make(chan struct{})}
	m.done.Go(func() {
		t := time.NewTicker(moveEvery)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				var waiting bool
				err := s.ro.QueryRow(`SELECT EXISTS (SELECT 1 FROM capabilities_pending)`).Scan(&waiting)
				if err == nil && !waiting {
					continue
				}
				if err == nil {
					err = s.Update(context.Background(), func(tx Tx) error { return tx.(*txn).moveCapabilities() })
				}
				if f := m.failed.Load(); err != nil && f != nil {
					(*f)(err)
				}
			}
		}
	})
	return m
}

// close stops the mover and waits for its last move; a store may be
// closed more than once.
func (m *mover) close() {
	m.once.Do(func() { close(m.stop) })
	m.done.Wait()
}

// OnMoveError has f hear of each background move of pending capabilities
// that fails (a PostgreSQL store has none).
func (s *Store) OnMoveError(f func(error)) {
	if s.mover != nil {
		s.mover.failed.Store(&f)
	}
}
