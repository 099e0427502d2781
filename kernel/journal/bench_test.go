package journal_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
)

// chainAppend is the hash-chain append the Merkle journal replaced, kept
// as the baseline of BenchmarkAppend.
func chainAppend(ctx context.Context, tx *sql.Tx, at time.Time, kind, ref string, body []byte) error {
	var seq int64
	var prev string
	err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	seq++
	h := sha256.New()
	var n [8]byte
	write := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	binary.BigEndian.PutUint64(n[:], uint64(seq))
	h.Write(n[:])
	write([]byte(at.UTC().Format(time.RFC3339Nano)))
	write([]byte(kind))
	write([]byte(ref))
	write(body)
	write([]byte(prev))
	_, err = tx.ExecContext(ctx, `INSERT INTO journal (seq, recorded_at, kind, ref, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		seq, at.Format(time.RFC3339Nano), kind, ref, body, prev, hex.EncodeToString(h.Sum(nil)))
	return err
}

const chainSchema = `CREATE TABLE journal (seq INTEGER PRIMARY KEY, recorded_at TEXT NOT NULL, kind TEXT NOT NULL,
	ref TEXT NOT NULL, body BLOB NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
	CREATE INDEX journal_kind ON journal (kind, seq)`

// benchDB opens a database as the kernel's store does (WAL, one writer).
func benchDB(b *testing.B, schema func(*sql.DB) error) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "j.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if err := schema(db); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkAppend measures one append in a transaction of its own, as a
// decision makes it, for the old hash chain (its head read from the table)
// and the Merkle journal (its frontier kept in memory, as the store does,
// or read from the table), in the same run, on a log that already holds
// 10,000 entries.
func BenchmarkAppend(b *testing.B) {
	body := make([]byte, 400) // about a signed decision receipt
	ctx := context.Background()
	type appendFn func(tx *sql.Tx, i int) error
	run := func(b *testing.B, db *sql.DB, app appendFn) {
		fill := func(n int) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := app(tx, i); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		fill(10_000)
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := app(tx, i); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("chain", func(b *testing.B) {
		db := benchDB(b, func(db *sql.DB) error { _, err := db.Exec(chainSchema); return err })
		run(b, db, func(tx *sql.Tx, i int) error {
			return chainAppend(ctx, tx, t0, "decision", "dec-"+strconv.Itoa(i), body)
		})
	})
	// As the store appends: its frontier kept in memory.
	b.Run("merkle", func(b *testing.B) {
		db := benchDB(b, func(db *sql.DB) error { return journal.Migrate(ctx, db) })
		f := journal.NewFrontier()
		run(b, db, func(tx *sql.Tx, i int) error {
			_, err := journal.Insert(ctx, tx, f, t0, "decision", "dec-"+strconv.Itoa(i), body)
			return err
		})
	})
	// Reading the frontier from the table first.
	b.Run("merkle-cold", func(b *testing.B) {
		db := benchDB(b, func(db *sql.DB) error { return journal.Migrate(ctx, db) })
		run(b, db, func(tx *sql.Tx, i int) error {
			_, err := journal.Append(ctx, tx, t0, "decision", "dec-"+strconv.Itoa(i), body)
			return err
		})
	})
}

// BenchmarkVerify streams a journal of AMBIT_VERIFY_ENTRIES entries
// (default 200,000; 400-byte bodies) through Verify against a checkpoint
// every 1,000 entries, and reports entries per minute and the largest heap
// seen while it ran.
func BenchmarkVerify(b *testing.B) {
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("AMBIT_VERIFY_ENTRIES")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	db := benchDB(b, func(db *sql.DB) error { return journal.Migrate(ctx, db) })
	body := make([]byte, 400)
	var heads []journal.TreeHead
	const batch = 1000
	f := journal.NewFrontier()
	for done := 0; done < n; done += batch {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		var rows []journal.Row
		for i := done; i < min(done+batch, n); i++ {
			binary.BigEndian.PutUint64(body, uint64(i))
			r, err := journal.Next(f, t0.Add(time.Duration(i)*time.Millisecond), "decision", fmt.Sprintf("dec-%d", i), slices.Clone(body))
			if err != nil {
				b.Fatal(err)
			}
			rows = append(rows, r)
		}
		if err := journal.InsertRows(ctx, tx, rows); err != nil {
			b.Fatal(err)
		}
		heads = append(heads, f.Head())
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	runtime.GC()
	// Reset the process's peak resident size (Linux), so that it measures
	// verification, SQLite's page cache included, not the set-up.
	rssReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	b.ResetTimer()
	for b.Loop() {
		r, err := journal.Verify(ctx, db, heads)
		if err != nil || !r.OK || r.Entries != int64(n) {
			b.Fatalf("Verify = %+v, %v", r, err)
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	perOp := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(n)/perOp.Minutes(), "entries/min")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	if rss, ok := peakRSS(); ok && rssReset {
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
	}
}

// peakRSS is the process's peak resident size in bytes (Linux).
func peakRSS() (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
