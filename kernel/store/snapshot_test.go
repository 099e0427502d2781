package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/ambitkernel/ambit/kernel/store"
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
