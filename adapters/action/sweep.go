package action

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// sweepBatch bounds the receipts one sweep pass re-sends.
const sweepBatch = 100

// Sweep sends the kernel every effect receipt it has not logged yet (a
// crash after commit, a kernel outage, an agent that never retried) and
// returns how many it logged. A failure is logged and left for the next
// pass.
func (c *Core) Sweep(ctx context.Context) int {
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

// RunSweep runs [Core.Sweep] now and then every interval until ctx ends.
// It always returns nil once ctx has ended, so it can run in an errgroup
// beside the server.
func (c *Core) RunSweep(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		c.Sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
