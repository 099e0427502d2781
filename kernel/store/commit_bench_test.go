package store

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/ambitkernel/ambit/kernel/logfile"
)

// BenchmarkDecisionCommit times what a granted decision's commit writes,
// made durable at each level, beside what the same bytes cost appended to
// a log file (package logfile), in the same run:
//
//   - sqlite: the store's Update with the capability's row and the two
//     journal entries (about 0.5 and 0.8 KB), as a decision commits them,
//     committed in SQLite alone, over a history of 20,000 decisions; its
//     background checkpoints run as they do in a kernel;
//   - logfile: one Append of three records, the row's 160 bytes (about
//     what its fields hold) and the two entries' bodies;
//   - store, at normal: the same Update as the store makes it,
//     acknowledged from its log file and copied into SQLite before the
//     next (logged.go).
//
// One at a time each commit or append is a write of its own (at full, a
// sync of its own); at 16 in flight concurrent ones share it.
func BenchmarkDecisionCommit(b *testing.B) {
	capBody, decBody, row := bytes.Repeat([]byte("c"), 500), bytes.Repeat([]byte("d"), 830), bytes.Repeat([]byte("r"), 160)
	for _, d := range []Durability{DurabilityNormal, DurabilityFull} {
		for _, c := range []int{1, 16} {
			b.Run(fmt.Sprintf("sqlite-%s/c=%d", d, c), func(b *testing.B) { sqliteCommits(b, d, c, false) })
			b.Run(fmt.Sprintf("logfile-%s/c=%d", d, c), func(b *testing.B) { logfileAppends(b, d, c, row, capBody, decBody) })
			if d == DurabilityNormal {
				b.Run(fmt.Sprintf("store-%s/c=%d", d, c), func(b *testing.B) { sqliteCommits(b, d, c, true) })
			}
		}
	}
}

// inFlight runs op b.N times, one at a time or from c goroutines, and
// fails the benchmark on op's first error.
func inFlight(b *testing.B, c int, op func(i int) error) {
	if c == 1 {
		i := 0
		for b.Loop() {
			if err := op(i); err != nil {
				b.Fatal(err)
			}
			i++
		}
		return
	}
	var next atomic.Int64
	b.ResetTimer()
	b.SetParallelism(max(1, c/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(int(next.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// sqliteCommits times decisions' updates, committed in SQLite alone, or
// as the store commits them (logged: at normal, acknowledged from its log
// file and copied into SQLite after).
func sqliteCommits(b *testing.B, d Durability, c int, logged bool) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "k.db"), d)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if !logged {
		s.closeLog()
	}
	decide := decisionUpdate(true)
	withHistory(b, s, decide)
	// The history's capabilities are moved out of the pending table
	// before the timing, not by the background during it.
	if err := s.movePending(); err != nil {
		b.Fatal(err)
	}
	inFlight(b, c, func(i int) error {
		return s.Update(ctx, func(tx Tx) error { return decide(tx, i) })
	})
}

func logfileAppends(b *testing.B, d Durability, c int, row, capBody, decBody []byte) {
	l, err := logfile.Open(filepath.Join(b.TempDir(), "log"), logfile.Options{Sync: d == DurabilityFull})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	inFlight(b, c, func(int) error {
		_, err := l.Append(row, capBody, decBody)
		return err
	})
}
