package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

// BenchmarkWatchedRecords is one poll of the records whose changes matter,
// as an evidence adapter asks for them every watch interval (500 ms by
// default), with n records seen inside the watch window. A poll reads
// every one of them: its cost grows with the records read in the window,
// not with what changed.
func BenchmarkWatchedRecords(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("seen=%d", n), func(b *testing.B) {
			s := benchStore(b, n, func(tx store.Tx, j int) error {
				return tx.SetRecordVersion("claims_db", fmt.Sprintf("C-%07d", j), "v1", t0)
			})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				err := s.View(ctx, func(tx store.Tx) error {
					ws, err := tx.WatchedRecords(t0.Add(-time.Hour), t0, "")
					if err == nil && len(ws) != n {
						err = fmt.Errorf("%d records watched, want %d", len(ws), n)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
		})
	}
}

// BenchmarkWatchedOutstanding is one poll with n outstanding capabilities
// on r records, none of them read lately, all moved into their table by
// the background: many capabilities on ten records, where the poll costs
// the records, and one capability a record, where it reads the index in
// one pass.
func BenchmarkWatchedOutstanding(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct{ n, records int }{{1_000, 10}, {10_000, 10}, {100_000, 10}, {10_000, 10_000}, {100_000, 100_000}} {
		b.Run(fmt.Sprintf("outstanding=%d/records=%d", c.n, c.records), func(b *testing.B) {
			s := benchStore(b, c.n, func(tx store.Tx, j int) error {
				return tx.InsertCapability(capability(fmt.Sprintf("cap-%07d", j), "task-1", fmt.Sprintf("claims/C-%d", j%c.records),
					agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, t0))
			})
			// The background moves them within a tenth of a second.
			time.Sleep(500 * time.Millisecond)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				err := s.View(ctx, func(tx store.Tx) error {
					ws, err := tx.WatchedRecords(t0, t0.Add(time.Minute), "")
					if err == nil && len(ws) != c.records {
						err = fmt.Errorf("%d records watched, want %d", len(ws), c.records)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchStore opens a store that b closes, and has add write n rows into
// it, a thousand an update.
func benchStore(b *testing.B, n int, add func(tx store.Tx, j int) error) *store.Store {
	b.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(b.TempDir(), "k.db"), store.DurabilityNormal)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	const perTx = 1000
	for i := 0; i < n; i += perTx {
		err := s.Update(ctx, func(tx store.Tx) error {
			for j := i; j < min(i+perTx, n); j++ {
				if err := add(tx, j); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return s
}
