package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/store"
	"github.com/ambitkernel/ambit/kernel/store/storetest"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// TestLedgerSnapshots: a body of several chunks reads back as written,
// with its digest; only the newest complete snapshots are kept, newest
// first; the root names the journal prefix.
func TestLedgerSnapshots(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for i := range 3 {
		update(t, s, func(tx store.Tx) error {
			_, err := tx.Append(t0, "canon", "x", []byte{byte(i)})
			return err
		})
	}
	root, err := s.JournalRootAt(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.JournalRootAt(ctx, 4); err == nil {
		t.Fatal("JournalRootAt past the journal's end: no error")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 2<<20+12345)
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	var written []store.LedgerSnapshot
	for i := range 5 {
		sn, err := s.WriteLedgerSnapshot(ctx, uint64(i), root, t0, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, sn)
	}
	sum := sha256.Sum256(body)
	if !bytes.Equal(written[0].Digest, sum[:]) || written[0].Chunks != 3 {
		t.Fatalf("digest %x, %d chunks; want %x, 3", written[0].Digest, written[0].Chunks, sum)
	}
	got, err := s.LedgerSnapshots(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != written[4].ID || got[2].ID != written[2].ID || got[0].JournalSize != 4 {
		t.Fatalf("kept %+v; want the last three written, newest first", got)
	}
	read, err := io.ReadAll(s.ReadLedgerSnapshot(ctx, got[0]))
	if err != nil || !bytes.Equal(read, body) {
		t.Fatalf("read back %d bytes, %v; want the %d written", len(read), err, len(body))
	}
	if !bytes.Equal(got[0].Root, root) {
		t.Fatalf("root %x, want %x", got[0].Root, root)
	}
	gone := written[0]
	if _, err := io.ReadAll(s.ReadLedgerSnapshot(ctx, gone)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reading a pruned snapshot: %v, want ErrNotFound", err)
	}
}

// TestLedgerSnapshotReader: a reader closed before the end of its body
// gives its connection back, and one that finds a chunk missing stops
// there with ErrNotFound, after the chunks before it.
func TestLedgerSnapshotReader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := storetest.DSN(t, filepath.Join(t.TempDir(), "k.db"))
	s := open(t, dsn)
	body := bytes.Repeat([]byte("snapshot"), 3<<20/8)
	sn, err := s.WriteLedgerSnapshot(ctx, 0, []byte{1}, t0, bytes.NewReader(body))
	if err != nil || sn.Chunks != 3 {
		t.Fatalf("written %+v, %v; want 3 chunks", sn, err)
	}
	// More readers than the store has reading connections, each closed
	// after its first bytes: a reader that kept its query open would
	// leave the next one waiting until the deadline.
	for i := range 20 {
		r := s.ReadLedgerSnapshot(ctx, sn)
		if _, err := io.ReadFull(r, make([]byte, 10)); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("reader %d: close: %v", i, err)
		}
		// Closed is not a missing chunk: the reader does not begin again.
		if n, err := r.Read(make([]byte, 10)); n != 0 || err == nil || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("reader %d: read after close: %d bytes, %v; want none and an error that it is closed", i, n, err)
		}
	}
	r := s.ReadLedgerSnapshot(ctx, sn)
	if read, err := io.ReadAll(r); err != nil || !bytes.Equal(read, body) {
		t.Fatalf("read back %d bytes, %v; want the %d written", len(read), err, len(body))
	}
	// Past the chunks the store holds.
	more := sn
	more.Chunks = 4
	if read, err := io.ReadAll(s.ReadLedgerSnapshot(ctx, more)); !errors.Is(err, store.ErrNotFound) || !bytes.Equal(read, body) {
		t.Fatalf("a chunk past the last: read %d bytes, %v; want the %d written, then ErrNotFound", len(read), err, len(body))
	}
	if sqldb.IsPostgres(dsn) {
		return // the chunk in the middle is taken out of an SQLite file
	}
	db, err := sql.Open("sqlite", "file:"+dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DELETE FROM ledger_snapshot_chunks WHERE snapshot_id = ? AND n = 1`, sn.ID); err != nil {
		t.Fatal(err)
	}
	if read, err := io.ReadAll(s.ReadLedgerSnapshot(ctx, sn)); !errors.Is(err, store.ErrNotFound) || !bytes.Equal(read, body[:1<<20]) {
		t.Fatalf("the middle chunk gone: read %d bytes, %v; want the first chunk's %d, then ErrNotFound", len(read), err, 1<<20)
	}
}
