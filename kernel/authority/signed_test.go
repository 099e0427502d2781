package authority

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/ambitkernel/ambit/kernel/memo"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"google.golang.org/protobuf/proto"
)

// TestSignedCapabilities: a capability envelope identical to one the
// kernel signed opens without its signature being checked again; any
// other (a byte changed, a capability it does not remember) is checked.
func TestSignedCapabilities(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer := envelope.NewSigner("kernel", priv)
	sign := func(id string) *receiptv1.Envelope {
		env, err := signer.Sign(&receiptv1.Capability{CapabilityId: id, IdempotencyKey: "idem-" + id})
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	s := signedCapabilities{digest: memo.New[string](maxIssued)}
	kept, other := sign("cap-1"), sign("cap-2")
	s.add("cap-1", envelope.Digest(kept))
	// No key to check a signature with: only what is remembered opens.
	none := envelope.Keyring{}
	var c receiptv1.Capability
	if err := s.open(none, "kernel", kept, &c); err != nil || c.GetIdempotencyKey() != "idem-cap-1" {
		t.Errorf("open(remembered) = %v, %v; want it decoded without a check", &c, err)
	}
	if err := s.open(none, "kernel", other, &c); err == nil {
		t.Error("a capability the kernel does not remember opened unchecked")
	}
	flipped := proto.CloneOf(kept)
	flipped.Signature[0] ^= 1
	if err := s.open(none, "kernel", flipped, &c); err == nil {
		t.Error("a remembered capability with a changed signature opened unchecked")
	}
	if err := s.open(envelope.Keyring{"kernel": pub}, "kernel", flipped, &c); err == nil {
		t.Error("a changed signature verified")
	}
	if err := s.open(envelope.Keyring{"kernel": pub}, "kernel", other, &c); err != nil || c.GetCapabilityId() != "cap-2" {
		t.Errorf("open(other, checked) = %v, %v", &c, err)
	}
	// Full, it forgets the oldest first.
	for i := range maxIssued {
		s.add(fmt.Sprintf("cap-x%d", i), envelope.Digest(other))
	}
	if err := s.open(none, "kernel", kept, &c); err == nil {
		t.Errorf("the oldest of %d more capabilities still opened unchecked", maxIssued)
	}
}
