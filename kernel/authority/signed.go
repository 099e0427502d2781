package authority

import (
	"github.com/ambitkernel/ambit/kernel/memo"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"google.golang.org/protobuf/proto"
)

// maxIssued bounds the capabilities whose envelopes the kernel remembers.
const maxIssued = 1 << 16

// signedCapabilities remembers the digests of the capability envelopes
// this kernel signed and committed, up to maxIssued of them. A
// redemption presents one back: an envelope identical to one the kernel
// signed (payload, key id and signature, see envelope.Digest) is that
// signature, checked without a second Ed25519 verification. What it does
// not remember (issued before a restart, or by another replica) is
// verified as before.
type signedCapabilities struct {
	digest *memo.Map[string] // capability id → envelope digest
}

// add remembers capability id's envelope by its digest ([envelope.Digest]),
// which the caller computes outside the writer that commits the capability.
func (s *signedCapabilities) add(id, d string) { s.digest.Put(id, d) }

// open decodes a capability envelope into c: at once when it is one this
// kernel issued, byte for byte, else after checking its signature with
// self under key id signer.
func (s *signedCapabilities) open(self envelope.Keyring, signer string, env *receiptv1.Envelope, c *receiptv1.Capability) error {
	if env.GetPayloadType() == capabilityType && env.GetKeyId() == signer && proto.Unmarshal(env.GetPayload(), c) == nil {
		// Redeemed once: presenting it does not keep it longer.
		d, ok := s.digest.Peek(c.GetCapabilityId())
		if ok && d == envelope.Digest(env) {
			return nil
		}
		proto.Reset(c)
	}
	return self.Open(env, signer, c)
}

var capabilityType = string((&receiptv1.Capability{}).ProtoReflect().Descriptor().FullName())
