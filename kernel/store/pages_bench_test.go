package store

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/ident"
)

// BenchmarkCommitPages commits what a granted decision writes, one
// decision to a commit as at one in flight: its capability's row and
// index entries, and its two journal entries, with bodies of the sizes a
// capability and a decision receipt have (about 0.5 and 0.8 KB). The
// store already holds 20,000 decisions over 100 tasks. It reports the
// pages each commit adds to SQLite's write-ahead log: each is two writes
// there and one more when a checkpoint copies it into the database file.
// Beside it, journal-only commits the two journal entries alone, without
// the capability's row: the share of a decision's commit that the
// capability rows cost, which grant state held in memory, with the
// journal as its only durable record, would leave off the commit.
func BenchmarkCommitPages(b *testing.B) {
	b.Run("decision", func(b *testing.B) { commitPages(b, true) })
	b.Run("journal-only", func(b *testing.B) { commitPages(b, false) })
}

func commitPages(b *testing.B, row bool) {
	checkpointEvery = time.Hour // the log only grows while it is counted
	defer func() { checkpointEvery = 200 * time.Millisecond }()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "k.db"), DurabilityNormal)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	s.closeLog() // SQLite's commits alone
	decide := decisionUpdate(row)
	withHistory(b, s, decide)
	// The log is emptied before it is counted, and again every 500
	// commits, below the size at which the writer would checkpoint it
	// itself. PASSIVE then copies nothing and reports its size in pages.
	empty := func() {
		if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
	}
	logPages := func() int {
		var busy, log, copied int
		if err := s.ro.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &copied); err != nil {
			b.Fatal(err)
		}
		return log
	}
	empty()
	pages, i := 0, 0
	for b.Loop() {
		if err := s.Update(ctx, func(tx Tx) error { return decide(tx, i) }); err != nil {
			b.Fatal(err)
		}
		i++
		if i%500 == 0 {
			b.StopTimer()
			pages += logPages()
			empty()
			b.StartTimer()
		}
	}
	pages += logPages()
	b.ReportMetric(float64(pages)/float64(i), "wal-pages/commit")
}

// decisionUpdate writes what a granted decision's commit writes, as the
// i-th of a run: its capability's row (unless row is false) and its two
// journal entries, with bodies of a capability's and a decision
// receipt's size (about 0.5 and 0.8 KB), on one of 100 tasks.
func decisionUpdate(row bool) func(tx Tx, i int) error {
	capBody, decBody := bytes.Repeat([]byte("c"), 500), bytes.Repeat([]byte("d"), 830)
	at := time.Now()
	return func(tx Tx, i int) error {
		id := ident.New(10)
		c := Capability{CapabilityID: "cap-" + id, DecisionID: "dec-" + ident.New(10), TaskID: fmt.Sprintf("task-%03d", i%100),
			Record: "claims_db/C-1", StateVersion: "v1", IdempotencyKey: "idem-" + id, Tool: "refund", Currency: "GBP",
			AmountMinor: 100, Status: 1, IssuedAt: at, ExpiresAt: at.Add(time.Hour), EffectHash: "h", Holder: "agent"}
		if row {
			if err := tx.InsertCapability(c); err != nil {
				return err
			}
		}
		if _, err := tx.Append(at, "capability", c.CapabilityID, capBody); err != nil {
			return err
		}
		_, err := tx.Append(at, "decision", c.DecisionID, decBody)
		return err
	}
}

// withHistory gives s a history of 20,000 decisions, a thousand to a
// commit.
func withHistory(b *testing.B, s *Store, decide func(tx Tx, i int) error) {
	b.Helper()
	for lo := 0; lo < 20000; lo += 1000 {
		err := s.Update(context.Background(), func(tx Tx) error {
			for i := lo; i < lo+1000; i++ {
				if err := decide(tx, i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
