package store

import (
	"context"
	"fmt"
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
// (UpdateCapability); the rest move in the background (movePending), a
// commit of their own every moveEvery after any was stored, or as soon as
// moveAt were. A store that replicas share writes capabilities directly,
// and so does the copy of batches acknowledged from the log file
// (logged.go), which no decision waits for.

// moveEvery is how often the background moves pending capabilities, and
// moveAt how many stored since a move began have it move at once: reads
// by task or by record scan the pending table, so a burst faster than the
// tick must not let it grow.
var moveEvery = 100 * time.Millisecond

const moveAt = 1024

var (
	// moveOneQuery and dropOneQuery move one pending capability, if it is
	// pending.
	moveOneQuery = `INSERT INTO capabilities (` + capabilityColumns + `) SELECT ` + capabilityColumns + ` FROM capabilities_pending WHERE capability_id = ?`
	dropOneQuery = `DELETE FROM capabilities_pending WHERE capability_id = ?`
	// moveAllQuery and dropAllQuery move every pending capability.
	moveAllQuery = `INSERT INTO capabilities (` + capabilityColumns + `) SELECT ` + capabilityColumns + ` FROM capabilities_pending`
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

// startMover moves s's pending capabilities in the background, those it
// opens with first.
func startMover(ctx context.Context, s *Store) (*background, error) {
	var waiting bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM capabilities_pending)`).Scan(&waiting); err != nil {
		return nil, fmt.Errorf("pending capabilities: %w", err)
	}
	s.moveDue.Store(waiting)
	return startBackground(moveEvery, s.movePending), nil
}

// movePending moves every pending capability if any was stored since the
// last move began. A capability is stored pending before its commit, and
// the move runs in a later commit, so none is left behind. A move that
// fails leaves them pending, where readers see them, for the next tick.
func (s *Store) movePending() error {
	if !s.moveDue.Swap(false) {
		return nil
	}
	s.pendingStored.Store(0)
	err := s.Update(context.Background(), func(tx Tx) error { return tx.(*txn).moveCapabilities() })
	if err != nil {
		s.moveDue.Store(true)
	}
	return err
}

// OnMoveError has f hear of each background move of pending capabilities
// that fails (a PostgreSQL store has none).
func (s *Store) OnMoveError(f func(error)) {
	if s.mover != nil {
		s.mover.onError(f)
	}
}
