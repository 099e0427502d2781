package action

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// sweepBatch bounds the receipts one sweep pass re-sends.
const sweepBatch = 100

// Sweep sends the kernel every effect receipt it has not logged yet (a
// crash after commit, a kernel outage, an agent that never retried) and
// returns how many it logged. A failure is logged and left for the next
// pass.
func (c *Core) Sweep(ctx context.Context) int {
	// Keys the kernel has logged but the table does not say so yet are
	// not sent again.
	c.FlushMarks(ctx)
	pending, err := c.d.Keys.Unrecorded(ctx, sweepBatch)
	if err != nil {
		c.d.Log.Warn("sweep: list unrecorded effects", zap.Error(err))
		return 0
	}
	n := 0
	for _, e := range pending {
		if ctx.Err() != nil {
			break
		}
		if _, err := c.record(ctx, e); err != nil {
			c.d.Log.Warn("sweep: effect not recorded", zap.String("receipt_id", e.EffectID),
				zap.String("idempotency_key", e.Key), zap.Error(err))
			continue
		}
		n++
		c.d.Log.Info("sweep: effect recorded", zap.String("receipt_id", e.EffectID),
			zap.String("capability_id", e.CapabilityID), zap.String("idempotency_key", e.Key))
	}
	return n
}

// RunSweep runs [Core.Sweep] now and then every interval until ctx ends,
// and notes in the key table, as they come, the receipts the kernel has
// logged (see [Core.FlushMarks]). It always returns nil once ctx has
// ended, so it can run in an errgroup beside the server.
func (c *Core) RunSweep(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	c.Sweep(ctx)
	// flush fires marksDelay after the first key a flush will note.
	var flush <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			// What is noted now is not sent again at the next start.
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			c.FlushMarks(last)
			cancel()
			return nil
		case <-c.marks.signal:
			if flush == nil {
				flush = time.After(marksDelay)
			}
		case <-flush:
			flush = nil
			c.FlushMarks(ctx)
		case <-t.C:
			c.Sweep(ctx)
		}
	}
}

// marksDelay is how long the keys the kernel has logged gather before one
// commit notes them all: at full durability that commit waits for the
// disk, and the table is the one every effect's key is written to.
const marksDelay = 200 * time.Millisecond

// marks are the keys whose receipts the kernel has logged and that the key
// table does not say so yet. They are noted after the answer, in batches:
// one commit (at full durability one fsync) for many effects instead of
// one on every effect's path. A note lost to a crash only means the sweep
// sends that receipt once more, and the kernel logs a receipt once.
type marks struct {
	mu      sync.Mutex
	pending []string
	signal  chan struct{}
}

func (m *marks) add(key string) {
	m.mu.Lock()
	m.pending = append(m.pending, key)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

func (m *marks) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.pending
	m.pending = nil
	return out
}

// FlushMarks notes in the key table every receipt the kernel has logged
// since the last flush. A failure is logged; the keys stay unmarked and
// the sweep sends their receipts again.
func (c *Core) FlushMarks(ctx context.Context) {
	keys := c.marks.take()
	for len(keys) > 0 {
		n := min(len(keys), sqldb.MaxKeys)
		if err := c.d.Keys.MarkRecorded(ctx, keys[:n]...); err != nil {
			c.d.Log.Warn("mark effects recorded", zap.Int("keys", n), zap.Error(err))
		}
		keys = keys[n:]
	}
}
