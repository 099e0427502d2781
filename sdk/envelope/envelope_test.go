package envelope_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"google.golang.org/protobuf/proto"
)

func keys(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func TestSignOpen(t *testing.T) {
	pub, priv := keys(t)
	otherPub, otherPriv := keys(t)
	ring := envelope.Keyring{"action": pub, "evidence": otherPub}
	receipt := &receiptv1.EffectReceipt{ReceiptId: "eff-1", IdempotencyKey: "k-1", RecordRef: "pay-1"}
	env, err := envelope.NewSigner("action", priv).Sign(receipt)
	if err != nil {
		t.Fatal(err)
	}

	// The payload is the receipt's deterministic encoding alone, though it
	// was marshalled after the signed encoding's head.
	if want, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(receipt); !bytes.Equal(env.Payload, want) || cap(env.Payload) != len(env.Payload) {
		t.Errorf("payload = %x (capacity %d), want %x", env.Payload, cap(env.Payload), want)
	}
	var got receiptv1.EffectReceipt
	if err := ring.Open(env, "action", &got); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !proto.Equal(&got, receipt) {
		t.Errorf("decoded %v, want %v", &got, receipt)
	}

	tamper := func(f func(e *receiptv1.Envelope)) *receiptv1.Envelope {
		c := proto.Clone(env).(*receiptv1.Envelope)
		f(c)
		return c
	}
	forged, _ := envelope.NewSigner("action", otherPriv).Sign(receipt)
	tests := []struct {
		name   string
		env    *receiptv1.Envelope
		signer string
		into   proto.Message
	}{
		{"flipped payload byte", tamper(func(e *receiptv1.Envelope) { e.Payload[3] ^= 1 }), "action", &receiptv1.EffectReceipt{}},
		{"flipped signature byte", tamper(func(e *receiptv1.Envelope) { e.Signature[0] ^= 1 }), "action", &receiptv1.EffectReceipt{}},
		{"relabelled type", tamper(func(e *receiptv1.Envelope) { e.PayloadType = "ambit.receipt.v1.ReadbackReceipt" }), "action", &receiptv1.ReadbackReceipt{}},
		{"decoded as another type", env, "action", &receiptv1.ReadbackReceipt{}},
		{"signed by another key under the same id", forged, "action", &receiptv1.EffectReceipt{}},
		{"expected another signer", env, "evidence", &receiptv1.EffectReceipt{}},
		{"unknown key id", tamper(func(e *receiptv1.Envelope) { e.KeyId = "mallory" }), "", &receiptv1.EffectReceipt{}},
		{"missing", nil, "", &receiptv1.EffectReceipt{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ring.Open(tt.env, tt.signer, tt.into); !errors.Is(err, envelope.ErrInvalid) {
				t.Errorf("Open = %v, want ErrInvalid", err)
			}
		})
	}
	if envelope.Hash(env) == envelope.Hash(tamper(func(e *receiptv1.Envelope) { e.Payload[3] ^= 1 })) {
		t.Error("hash ignores the payload")
	}
}

// TestDigestVector pins Digest and Hash: receipts reference envelopes by
// them, so a change of encoding would orphan every reference recorded.
func TestDigestVector(t *testing.T) {
	alone := &receiptv1.Envelope{PayloadType: "x.y", Payload: []byte("payload"), KeyId: "k1", Signature: []byte("sig")}
	batched := &receiptv1.Envelope{PayloadType: "x.y", Payload: []byte("payload"), KeyId: "k1", Signature: []byte("sig"),
		Batch: &receiptv1.Batch{Index: 3, Size: 9, Path: [][]byte{[]byte("p1"), []byte("p2")}}}
	for _, tt := range []struct{ name, got, want string }{
		{"Digest alone", envelope.Digest(alone), "dddb0ca74313cd3b30c01d81dea21d5ae2a134e5a9fc16c59fe92e446d147c5a"},
		{"Digest in a batch", envelope.Digest(batched), "cc11e6de6deee6569061993deabb2bab178472a947250c7a523675f541d639df"},
		{"Hash", envelope.Hash(batched), "239f59ed55e737c77147cf55ad0c1b030b6d7ee748a7426952f9b852d5a935e5"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}
