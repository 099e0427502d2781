package evidence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
)

// Watch reports state changes of the records tasks depend on as they
// happen (coupling rule 3), until ctx ends: every interval it asks the
// kernel which records it watches, reads the current state version of
// each record of this adapter's sources, and reports every one that
// differs from the version the kernel last saw — the empty version when
// the record is gone. A failed poll is logged and retried at the next
// interval; a record that cannot be read is never reported as gone.
func (c *Core) Watch(ctx context.Context, interval time.Duration) {
	c.watch.mu.Lock()
	c.watch.grace = max(watchGraceIntervals*interval, minWatchGrace)
	c.watch.mu.Unlock()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.poll(ctx)
		}
	}
}

// maxWatchedMessage bounds the kernel's list of watched records, in bytes.
// gRPC's default of 4 MiB holds 35,000 to 140,000 records, by the lengths
// of their keys and versions: past it every poll failed, and no change
// was reported at all.
const maxWatchedMessage = 256 << 20

// poll makes one pass over the watched records.
func (c *Core) poll(ctx context.Context) {
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	watched, err := c.d.Kernel.WatchedRecords(kctx, &kernelv1.WatchedRecordsRequest{}, grpc.MaxCallRecvMsgSize(maxWatchedMessage))
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			c.d.Log.Warn("watched records unavailable", zap.Error(err))
			c.watch.failed(c.d.Now(), err)
		}
		return
	}
	c.watch.answered()
	read := c.readMany(ctx, watched.GetRecords())
	for _, w := range watched.GetRecords() {
		if ctx.Err() != nil {
			return
		}
		src, ok := c.d.Sources[w.GetSource()]
		if !ok {
			continue // another adapter's source
		}
		if r, ok := read[w.GetSource()][w.GetRecordKey()]; ok {
			if r.StateVersion != w.GetStateVersion() {
				c.report(ctx, w, r.StateVersion, r.observed)
			}
			continue
		}
		observed := c.d.Now()
		now, err := c.version(ctx, src, w.GetRecordKey())
		if err != nil {
			if ctx.Err() == nil {
				c.d.Log.Warn("watched record unreadable", zap.String("source", w.GetSource()),
					zap.String("record_key", w.GetRecordKey()), zap.Error(err))
			}
			continue
		}
		if now == w.GetStateVersion() {
			continue
		}
		c.report(ctx, w, now, observed)
	}
}

// WatchCheck is the name of the health probe of the watcher.
const WatchCheck = "watch"

// A watcher whose polls of the kernel fail for watchGraceIntervals
// intervals, and minWatchGrace at least, fails its health probe: long
// enough for a kernel to restart, short enough to be noticed.
const (
	watchGraceIntervals = 5
	minWatchGrace       = 2 * time.Second
)

// watchState is how the watcher's polls of the kernel are going.
type watchState struct {
	mu    sync.Mutex
	grace time.Duration
	// failingSince is when the polls began to fail, zero while the last
	// one was answered; lastErr is the last failure.
	failingSince time.Time
	lastErr      error
}

func (w *watchState) failed(now time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failingSince.IsZero() {
		w.failingSince = now
	}
	w.lastErr = err
}

func (w *watchState) answered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failingSince, w.lastErr = time.Time{}, nil
}

// CheckWatch fails while the watcher's polls of the kernel have failed
// for longer than its grace: the changes of the records the adapter read
// then go unreported (coupling rule 3), so it reports NOT_SERVING until a
// poll is answered again. The process frame runs it as a health probe
// ([WatchCheck]).
func (c *Core) CheckWatch(context.Context) error {
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	if c.watch.failingSince.IsZero() {
		return nil
	}
	if failing := c.d.Now().Sub(c.watch.failingSince); failing > c.watch.grace {
		return fmt.Errorf("the kernel has not answered the watcher's polls for %s, so no change of a record read is reported: %w",
			failing.Round(time.Second), c.watch.lastErr)
	}
	return nil
}

// readAt is a record and when its read began.
type readAt struct {
	Record
	observed time.Time
}

// readMany reads, by source, the watched records of the sources that read
// many records at once: a few statements per pass instead of one per
// record. What it does not return (a source that cannot, a record it
// could not read whole, a source that failed) is read one by one.
func (c *Core) readMany(ctx context.Context, watched []*kernelv1.WatchedRecord) map[string]map[string]readAt {
	keys := map[string][]string{}
	for _, w := range watched {
		if src, ok := c.d.Sources[w.GetSource()]; ok {
			if _, many := src.Connector.(manyReader); many {
				keys[w.GetSource()] = append(keys[w.GetSource()], w.GetRecordKey())
			}
		}
	}
	out := make(map[string]map[string]readAt, len(keys))
	for name, ks := range keys {
		observed := c.d.Now()
		sctx, cancel := context.WithTimeout(ctx, c.d.SourceTimeout)
		records, err := c.d.Sources[name].Connector.(manyReader).ReadMany(sctx, ks)
		cancel()
		if err != nil {
			continue
		}
		byKey := make(map[string]readAt, len(records))
		for k, r := range records {
			byKey[k] = readAt{Record: r, observed: observed}
		}
		out[name] = byKey
	}
	return out
}

// version is a record's current state version, "" when it is gone.
func (c *Core) version(ctx context.Context, src Source, key string) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, c.d.SourceTimeout)
	defer cancel()
	rec, err := src.Connector.Read(sctx, key)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return rec.StateVersion, err
}

func (c *Core) report(ctx context.Context, w *kernelv1.WatchedRecord, version string, observed time.Time) {
	log := c.d.Log.With(zap.String("source", w.GetSource()), zap.String("record_key", w.GetRecordKey()),
		zap.String("was", w.GetStateVersion()), zap.String("state_version", version))
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	resp, err := c.d.Kernel.ReportStateChange(kctx, &kernelv1.ReportStateChangeRequest{
		Source: w.GetSource(), RecordKey: w.GetRecordKey(), StateVersion: version,
		ObservedAt: timestamppb.New(observed),
	})
	if err != nil {
		if ctx.Err() == nil {
			// The next poll sees the same difference and reports it again.
			log.Warn("state change not reported", zap.Error(err))
		}
		return
	}
	log.Info("state change reported", zap.Bool("state_changed", resp.GetStateChanged()),
		zap.Strings("revoked_capability_ids", resp.GetRevokedCapabilityIds()))
}
