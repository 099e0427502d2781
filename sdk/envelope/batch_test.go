package envelope_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"google.golang.org/protobuf/proto"
)

func TestSignAllOpens(t *testing.T) {
	pub, priv := keys(t)
	ring := envelope.Keyring{"kernel": pub}
	signer := envelope.NewSigner("kernel", priv)
	for n := 1; n <= 9; n++ {
		ms := make([]proto.Message, n)
		for i := range ms {
			ms[i] = &receiptv1.Capability{CapabilityId: fmt.Sprintf("cap-%d", i)}
		}
		envs, err := signer.SignAll(ms...)
		if err != nil {
			t.Fatal(err)
		}
		for i, env := range envs {
			var c receiptv1.Capability
			if err := ring.Open(env, "kernel", &c); err != nil {
				t.Fatalf("%d records, record %d: %v", n, i, err)
			}
			if c.GetCapabilityId() != fmt.Sprintf("cap-%d", i) {
				t.Errorf("%d records, record %d opened as %q", n, i, c.GetCapabilityId())
			}
			switch b := env.GetBatch(); {
			case n == 1 && b != nil:
				t.Errorf("a record signed alone carries a batch: %v", b)
			case n > 1 && (b.GetIndex() != uint64(i) || b.GetSize() != uint64(n)):
				t.Errorf("%d records, record %d: batch %v", n, i, b)
			case n > 1 && !bytes.Equal(env.GetSignature(), envs[0].GetSignature()):
				t.Errorf("%d records, record %d: a signature of its own", n, i)
			}
		}
	}
	if _, err := signer.SignAll(); err == nil {
		t.Error("SignAll of nothing succeeded")
	}
}

func TestBatchTampered(t *testing.T) {
	pub, priv := keys(t)
	ring := envelope.Keyring{"kernel": pub}
	envs, err := envelope.NewSigner("kernel", priv).SignAll(
		&receiptv1.Capability{CapabilityId: "cap-1"},
		&receiptv1.DecisionReceipt{DecisionId: "dec-1"},
		&receiptv1.Capability{CapabilityId: "cap-2"},
	)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := envelope.NewSigner("kernel", priv).Sign(&receiptv1.Capability{CapabilityId: "cap-1"})
	if err != nil {
		t.Fatal(err)
	}
	tamper := func(env *receiptv1.Envelope, f func(e *receiptv1.Envelope)) *receiptv1.Envelope {
		c := proto.CloneOf(env)
		f(c)
		return c
	}
	tests := []struct {
		name string
		env  *receiptv1.Envelope
	}{
		{"flipped payload byte", tamper(envs[0], func(e *receiptv1.Envelope) { e.Payload[1] ^= 1 })},
		{"flipped path byte", tamper(envs[0], func(e *receiptv1.Envelope) { e.Batch.Path[0][5] ^= 1 })},
		{"another leaf's place", tamper(envs[0], func(e *receiptv1.Envelope) { e.Batch.Index = 1 })},
		{"place past the batch", tamper(envs[2], func(e *receiptv1.Envelope) { e.Batch.Index = 3 })},
		{"another size", tamper(envs[0], func(e *receiptv1.Envelope) { e.Batch.Size = 4 })},
		{"a batch of one", tamper(envs[2], func(e *receiptv1.Envelope) { e.Batch = &receiptv1.Batch{Size: 1} })},
		{"path cut short", tamper(envs[0], func(e *receiptv1.Envelope) { e.Batch.Path = e.Batch.Path[:1] })},
		{"path hash of 31 bytes", tamper(envs[0], func(e *receiptv1.Envelope) { e.Batch.Path[0] = e.Batch.Path[0][:31] })},
		{"batch dropped", tamper(envs[0], func(e *receiptv1.Envelope) { e.Batch = nil })},
		{"batch given to a record signed alone", tamper(alone, func(e *receiptv1.Envelope) { e.Batch = proto.CloneOf(envs[0].Batch) })},
		{"another record's payload under this path", tamper(envs[0], func(e *receiptv1.Envelope) { e.Payload = envs[2].Payload })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ring.Open(tt.env, "kernel", &receiptv1.Capability{}); !errors.Is(err, envelope.ErrInvalid) {
				t.Errorf("Open = %v, want ErrInvalid", err)
			}
			if envelope.Digest(tt.env) == envelope.Digest(envs[0]) {
				t.Error("the tampered envelope digests as the first")
			}
		})
	}
}

// TestSignConcurrent seals from many goroutines at once: every envelope
// opens as its own record, whatever batch it joined.
func TestSignConcurrent(t *testing.T) {
	pub, priv := keys(t)
	ring := envelope.Keyring{"action": pub}
	signer := envelope.NewSigner("action", priv)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				id := fmt.Sprintf("eff-%d-%d", g, i)
				env, err := signer.Sign(&receiptv1.EffectReceipt{ReceiptId: id})
				if err != nil {
					t.Error(err)
					return
				}
				var r receiptv1.EffectReceipt
				if err := ring.Open(env, "action", &r); err != nil || r.GetReceiptId() != id {
					t.Errorf("%s opened as %q: %v", id, r.GetReceiptId(), err)
				}
			}
		})
	}
	wg.Wait()
}

// TestSignBadKey: a key of the wrong length is an error for every caller
// of the batch, not a panic on the goroutine that leads it, and the
// signer is still usable after.
func TestSignBadKey(t *testing.T) {
	s := envelope.NewSigner("kernel", make([]byte, 10))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := s.SignAll(&receiptv1.Capability{}, &receiptv1.DecisionReceipt{}); err == nil {
				t.Error("SignAll with a 10-byte key succeeded")
			}
		})
	}
	wg.Wait()
	if _, err := s.Sign(&receiptv1.Capability{}); err == nil {
		t.Error("Sign with a 10-byte key succeeded")
	}
}

// FuzzOpenBatch changes a batch-signed envelope's place, size, path and
// payload: Open never panics, and accepts only an envelope identical to
// one that was signed.
func FuzzOpenBatch(f *testing.F) {
	pub, priv := keys(f)
	ring := envelope.Keyring{"kernel": pub}
	envs, err := envelope.NewSigner("kernel", priv).SignAll(
		&receiptv1.Capability{CapabilityId: "cap-1"},
		&receiptv1.Capability{CapabilityId: "cap-2"},
		&receiptv1.Capability{CapabilityId: "cap-3"},
		&receiptv1.Capability{CapabilityId: "cap-4"},
		&receiptv1.Capability{CapabilityId: "cap-5"},
	)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), uint64(0), uint64(5), []byte{}, uint8(0), uint8(0))
	f.Add(uint8(4), uint64(4), uint64(5), []byte{1}, uint8(0), uint8(1))
	f.Add(uint8(2), uint64(3), uint64(8), []byte{0, 0xff}, uint8(3), uint8(0))
	f.Fuzz(func(t *testing.T, which uint8, index, size uint64, pathEdit []byte, cut, flip uint8) {
		env := proto.CloneOf(envs[int(which)%len(envs)])
		env.Batch.Index, env.Batch.Size = index, size
		for i, b := range pathEdit {
			if p := env.Batch.Path; len(p) > 0 {
				p[i%len(p)][i%32] ^= b
			}
		}
		env.Batch.Path = env.Batch.Path[:len(env.Batch.Path)-min(int(cut), len(env.Batch.Path))]
		if flip != 0 && len(env.Payload) > 0 {
			env.Payload[int(flip)%len(env.Payload)] ^= flip
		}
		var c receiptv1.Capability
		if ring.Open(env, "kernel", &c) != nil {
			return
		}
		for _, orig := range envs {
			if proto.Equal(env, orig) {
				return
			}
		}
		t.Errorf("an altered envelope opened: %v", env)
	})
}
