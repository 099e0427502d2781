package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/store"
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
			s, err := store.Open(ctx, filepath.Join(b.TempDir(), "k.db"), store.DurabilityNormal)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const perTx = 5000
			for i := 0; i < n; i += perTx {
				err := s.Update(ctx, func(tx store.Tx) error {
					for j := i; j < min(i+perTx, n); j++ {
						if err := tx.SetRecordVersion("claims_db", fmt.Sprintf("C-%07d", j), "v1", t0); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				err := s.View(ctx, func(tx store.Tx) error {
					ws, err := tx.WatchedRecords(t0.Add(-time.Hour), "")
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
