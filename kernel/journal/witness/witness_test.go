package witness_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/journal/witness"
	"golang.org/x/mod/sumdb/note"
	_ "modernc.org/sqlite"
)

// kernelLog is a journal and its signer.
type kernelLog struct {
	db *sql.DB
	s  *checkpoint.Signer
}

func newLog(t *testing.T, key ed25519.PrivateKey) *kernelLog {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if err := journal.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.NewSigner("ambit-kernel/test", key)
	if err != nil {
		t.Fatal(err)
	}
	return &kernelLog{db: db, s: s}
}

func (l *kernelLog) append(t *testing.T, tag string, n int) {
	t.Helper()
	for i := range n {
		if _, err := journal.Append(context.Background(), l.db, time.Unix(int64(i), 0), "test", fmt.Sprintf("%s-%d", tag, i), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// checkpoint signs the log's head and proves it from size from.
func (l *kernelLog) checkpoint(t *testing.T, from uint64) ([]byte, [][]byte) {
	t.Helper()
	ctx := context.Background()
	h, err := journal.Head(ctx, l.db)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := l.s.Sign(h)
	if err != nil {
		t.Fatal(err)
	}
	var p [][]byte
	if from <= h.Size {
		if p, err = journal.ConsistencyProof(ctx, l.db, from, h.Size); err != nil {
			t.Fatal(err)
		}
	}
	return cp.Note, p
}

func vkey(t *testing.T, key ed25519.PrivateKey) string {
	k, err := note.NewEd25519VerifierKey("ambit-kernel/test", key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestWitness(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	dir := filepath.Join(t.TempDir(), "witness")
	w, err := witness.Open(dir, vkey(t, key))
	if err != nil {
		t.Fatal(err)
	}
	l := newLog(t, key)
	l.append(t, "a", 10)
	cp, p := l.checkpoint(t, 0)
	if got, err := w.Update(cp, p); err != nil || got.Head.Size != 10 {
		t.Fatalf("first checkpoint: %v, %v", got.Head, err)
	}
	l.append(t, "b", 7)
	cp17, p := l.checkpoint(t, 10)
	if got, err := w.Update(cp17, p); err != nil || got.Head.Size != 17 {
		t.Fatalf("extension to 17: %v, %v", got.Head, err)
	}
	// The same checkpoint again is fine.
	if _, err := w.Update(cp17, nil); err != nil {
		t.Fatalf("the same checkpoint again: %v", err)
	}

	// The kernel is rolled back to a copy of its database at 10 entries,
	// then goes on: smaller, then the same size with other entries, then
	// larger: every checkpoint of that history is refused.
	rolled := newLog(t, key)
	rolled.append(t, "a", 10)
	old, _ := rolled.checkpoint(t, 0)
	if _, err := w.Update(old, nil); !errors.Is(err, witness.ErrRolledBack) {
		t.Errorf("rolled back to 10: %v, want ErrRolledBack", err)
	}
	rolled.append(t, "c", 7)
	same, p := rolled.checkpoint(t, 17)
	if _, err := w.Update(same, p); !errors.Is(err, witness.ErrForked) {
		t.Errorf("another history of 17: %v, want ErrForked", err)
	}
	rolled.append(t, "d", 5)
	larger, p := rolled.checkpoint(t, 17)
	if _, err := w.Update(larger, p); !errors.Is(err, witness.ErrForked) {
		t.Errorf("another history of 22: %v, want ErrForked", err)
	}
	// A proof from the honest log does not help the forged checkpoint.
	l.append(t, "e", 5)
	_, honest := l.checkpoint(t, 17)
	if _, err := w.Update(larger, honest); !errors.Is(err, witness.ErrForked) {
		t.Errorf("forged checkpoint with an honest proof: %v, want ErrForked", err)
	}
	if last, _, _ := w.Latest(); last.Head.Size != 17 {
		t.Errorf("after refusals the witness holds %d, want 17", last.Head.Size)
	}

	// Reopened from its folder alone, it remembers.
	w, err = witness.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	next, p := l.checkpoint(t, 17)
	if got, err := w.Update(next, p); err != nil || got.Head.Size != 22 {
		t.Errorf("honest extension after reopening: %v, %v", got.Head, err)
	}
	// Another log's key is refused; so are its checkpoints.
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := witness.Open(dir, vkey(t, other)); !errors.Is(err, witness.ErrOtherLog) {
		t.Errorf("another key: %v, want ErrOtherLog", err)
	}
	foreign := newLog(t, other)
	foreign.append(t, "a", 30)
	fcp, p := foreign.checkpoint(t, 22)
	if _, err := w.Update(fcp, p); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("another log's checkpoint: %v, want ErrInvalid", err)
	}
}
