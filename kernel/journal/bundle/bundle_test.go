package bundle_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal/bundle"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/store"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"google.golang.org/protobuf/proto"
)

var kinds = []string{"decision", "effect"}

type fixture struct {
	st   *store.Store
	pub  *checkpoint.Publisher
	keys envelope.Keyring
}

// newFixture logs n entries; entry 5 is a decision receipt signed by the
// kernel, entry 9 an effect receipt signed by the action adapter.
func newFixture(t *testing.T, n int) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "k.db"), store.DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	kpub, kernelKey, _ := ed25519.GenerateKey(rand.Reader)
	apub, actionKey, _ := ed25519.GenerateKey(rand.Reader)
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for i := 1; i <= n; i++ {
		kind, ref, body := "task.bind", fmt.Sprintf("task-%d", i), []byte("bound")
		var msg proto.Message
		var signer *envelope.Signer
		switch i {
		case 5:
			kind, ref, signer = "decision", "dec-5", envelope.NewSigner("kernel", kernelKey)
			msg = &receiptv1.DecisionReceipt{DecisionId: "dec-5", TaskId: "task-1"}
		case 9:
			kind, ref, signer = "effect", "eff-9", envelope.NewSigner("action", actionKey)
			msg = &receiptv1.EffectReceipt{ReceiptId: "eff-9", IdempotencyKey: "k-9"}
		}
		if msg != nil {
			env, err := signer.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			if body, err = proto.Marshal(env); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Update(ctx, func(tx store.Tx) error {
			_, err := tx.Append(at.Add(time.Duration(i)*time.Second), kind, ref, body)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if i == 7 {
			// A checkpoint of size 7, which holds the decision only.
			if _, err := newPublisher(t, st, kernelKey).Publish(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &fixture{st: st, pub: newPublisher(t, st, kernelKey), keys: envelope.Keyring{"kernel": kpub, "action": apub}}
}

func newPublisher(t *testing.T, st *store.Store, key ed25519.PrivateKey) *checkpoint.Publisher {
	s, err := checkpoint.NewSigner("ambit-kernel/test", key)
	if err != nil {
		t.Fatal(err)
	}
	return checkpoint.NewPublisher(checkpoint.Options{Signer: s, Dir: checkpoint.Dir(filepath.Join(filepath.Dir(t.TempDir()), "cps"))}, st, checkpoint.Checkpoint{})
}

func (f *fixture) export(t *testing.T, id string, size uint64) []byte {
	t.Helper()
	b, err := bundle.Export(context.Background(), f.st, f.pub, id, kinds, size)
	if err != nil {
		t.Fatal(err)
	}
	data, err := bundle.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestExportVerify(t *testing.T) {
	f := newFixture(t, 12)
	v := f.pub.Verifier()
	for _, tt := range []struct {
		id           string
		size         uint64
		key          string
		seq          int64
		provenInSize uint64
	}{
		{id: "dec-5", key: "kernel", seq: 5, provenInSize: 12},
		{id: "eff-9", key: "action", seq: 9, provenInSize: 12},
		{id: "dec-5", size: 7, key: "kernel", seq: 5, provenInSize: 7},
	} {
		data := f.export(t, tt.id, tt.size)
		got, err := bundle.Verify(data, f.keys, v)
		if err != nil {
			t.Fatalf("%s at %d: %v", tt.id, tt.size, err)
		}
		if got.KeyID != tt.key || got.Entry.Seq != tt.seq || got.Checkpoint.Head.Size != tt.provenInSize {
			t.Errorf("%s at %d: signed by %s, entry %d, checkpoint %d", tt.id, tt.size, got.KeyID, got.Entry.Seq, got.Checkpoint.Head.Size)
		}
	}
	ctx := context.Background()
	if _, err := bundle.Export(ctx, f.st, f.pub, "task-3", kinds, 0); !errors.Is(err, bundle.ErrNotFound) {
		t.Errorf("exporting a non-receipt entry: %v, want ErrNotFound", err)
	}
	if _, err := bundle.Export(ctx, f.st, f.pub, "eff-9", kinds, 7); !errors.Is(err, bundle.ErrNoCheckpoint) {
		t.Errorf("exporting against a checkpoint that does not hold it: %v, want ErrNoCheckpoint", err)
	}
	if _, err := bundle.Export(ctx, f.st, f.pub, "dec-5", kinds, 6); !errors.Is(err, bundle.ErrNoCheckpoint) {
		t.Errorf("exporting against a size never signed: %v, want ErrNoCheckpoint", err)
	}
}

// TestVerifyRefusesAnyChangedByte flips every bit pattern of every byte of
// a bundle; none may verify.
func TestVerifyRefusesAnyChangedByte(t *testing.T) {
	f := newFixture(t, 12)
	data := f.export(t, "eff-9", 0)
	v := f.pub.Verifier()
	if _, err := bundle.Verify(data, f.keys, v); err != nil {
		t.Fatal(err)
	}
	for i := range data {
		for _, flip := range []byte{0x01, 0x02, 0x08, 0x20, 0x80, 0xff} {
			bad := append([]byte(nil), data...)
			bad[i] ^= flip
			if _, err := bundle.Verify(bad, f.keys, v); err == nil {
				t.Fatalf("byte %d of %d xor %#x: the changed bundle verifies", i, len(data), flip)
			}
		}
	}
	// Truncated or extended.
	for _, bad := range [][]byte{data[:len(data)-1], append(append([]byte(nil), data...), 0)} {
		if _, err := bundle.Verify(bad, f.keys, v); err == nil {
			t.Errorf("a bundle of %d bytes (of %d) verifies", len(bad), len(data))
		}
	}
	// Other keys.
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := bundle.Verify(data, envelope.Keyring{"action": other}, v); err == nil || !strings.Contains(err.Error(), "receipt") {
		t.Errorf("with another issuer key: %v", err)
	}
	otherLog, _ := checkpoint.NewVerifier("ambit-kernel/test", other)
	if _, err := bundle.Verify(data, f.keys, otherLog); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Errorf("with another log key: %v", err)
	}
}
