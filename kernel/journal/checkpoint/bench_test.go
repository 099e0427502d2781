package checkpoint_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
)

// BenchmarkSigning compares what a receipt costs to sign (one Ed25519
// envelope signature each) with what a checkpoint costs: the note
// signature alone, and publishing it (signed, written atomically with an
// fsync, twice: under its size and as the latest).
func BenchmarkSigning(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	b.Run("receipt", func(b *testing.B) {
		s := envelope.NewSigner("kernel", key)
		r := &receiptv1.DecisionReceipt{DecisionId: "dec-0123456789abcdef01234567", TaskId: "task-1", Agent: "agent", LedgerHead: "4d800c451c6a2aae674808270ba7371c7dd4912fe0844fe714214dd52513a8aa"}
		for b.Loop() {
			if _, err := s.Sign(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	s, err := checkpoint.NewSigner("ambit-kernel/bench", key)
	if err != nil {
		b.Fatal(err)
	}
	h := journal.TreeHead{Size: 1_000_000, Root: make([]byte, 32)}
	b.Run("checkpoint-sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Sign(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checkpoint-publish", func(b *testing.B) {
		src := &fixedSource{head: h}
		p := checkpoint.NewPublisher(checkpoint.Options{Signer: s, Dir: checkpoint.Dir(filepath.Join(b.TempDir(), "cps")), Keep: 100}, src, checkpoint.Checkpoint{})
		for b.Loop() {
			src.head.Size++
			if _, err := p.Publish(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fixedSource is a journal whose head the benchmark sets.
type fixedSource struct{ head journal.TreeHead }

func (f *fixedSource) Head(context.Context) (journal.TreeHead, error) { return f.head, nil }
func (f *fixedSource) JournalSize() uint64                            { return f.head.Size }
func (f *fixedSource) JournalGrown(uint64) <-chan struct{}            { return nil }
