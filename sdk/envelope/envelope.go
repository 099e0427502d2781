package envelope

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"google.golang.org/protobuf/proto"
)

// ErrInvalid marks an envelope that does not verify: unknown signer, wrong
// type, bad signature or undecodable payload.
var ErrInvalid = errors.New("envelope does not verify")

const domain = "ambit-envelope-v1"

// pae is the pre-authentication encoding signed: domain, type and payload,
// each length-prefixed so no two inputs encode alike.
func pae(payloadType string, payload []byte) []byte {
	buf := make([]byte, 0, paeHead(payloadType)+len(payload))
	return append(appendPAEHead(buf, payloadType, len(payload)), payload...)
}

// paeHead is the length of the encoding before the payload.
func paeHead(payloadType string) int { return len(domain) + 8 + len(payloadType) + 8 }

// appendPAEHead appends the encoding's part before a payload of n bytes.
func appendPAEHead(buf []byte, payloadType string, n int) []byte {
	buf = append(buf, domain...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(payloadType)))
	buf = append(buf, payloadType...)
	return binary.BigEndian.AppendUint64(buf, uint64(n))
}

// Signer seals records with one key. Records sealed at the same moment,
// by one call or by concurrent ones, share one signature (see the package
// documentation).
type Signer struct {
	keyID string
	key   ed25519.PrivateKey
	group group
}

// NewSigner returns a signer whose envelopes name keyID.
func NewSigner(keyID string, key ed25519.PrivateKey) *Signer {
	return &Signer{keyID: keyID, key: key}
}

// KeyID is the key id the signer's envelopes carry.
func (s *Signer) KeyID() string { return s.keyID }

// Sign serialises m and signs it.
func (s *Signer) Sign(m proto.Message) (*receiptv1.Envelope, error) {
	envs, err := s.SignAll(m)
	if err != nil {
		return nil, err
	}
	return envs[0], nil
}

// SignAll serialises ms and signs them, under one signature when there is
// more than one: the records of one decision are then sealed at the cost
// of one. Records other goroutines seal meanwhile join the same signature.
func (s *Signer) SignAll(ms ...proto.Message) ([]*receiptv1.Envelope, error) {
	if len(ms) == 0 || len(ms) > maxBatch {
		return nil, fmt.Errorf("sign: %d records, want 1 to %d", len(ms), maxBatch)
	}
	recs := make([]record, len(ms))
	for i, m := range ms {
		typ := string(m.ProtoReflect().Descriptor().FullName())
		// The payload is marshalled after room for the encoding's head,
		// which is filled in once its length is known: what is signed is
		// then the whole buffer, without a copy of the payload.
		head := paeHead(typ)
		buf, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(make([]byte, head), m)
		if err != nil {
			return nil, fmt.Errorf("sign %s: %w", typ, err)
		}
		payload := buf[head:len(buf):len(buf)]
		appendPAEHead(buf[:0], typ, len(payload))
		recs[i] = record{encoding: buf, env: &receiptv1.Envelope{PayloadType: typ, Payload: payload, KeyId: s.keyID}}
	}
	if err := s.group.seal(s.key, recs); err != nil {
		return nil, err
	}
	out := make([]*receiptv1.Envelope, len(recs))
	for i := range recs {
		out[i] = recs[i].env
	}
	return out, nil
}

// Keyring maps key ids to public keys.
type Keyring map[string]ed25519.PublicKey

// Open verifies env against the key named signer (which must be the
// envelope's key id) and decodes its payload into m, whose type must match.
// An empty signer accepts any key in the ring.
func (k Keyring) Open(env *receiptv1.Envelope, signer string, m proto.Message) error {
	if env == nil {
		return fmt.Errorf("%w: missing", ErrInvalid)
	}
	want := string(m.ProtoReflect().Descriptor().FullName())
	if env.GetPayloadType() != want {
		return fmt.Errorf("%w: payload type %q, want %q", ErrInvalid, env.GetPayloadType(), want)
	}
	if signer != "" && env.GetKeyId() != signer {
		return fmt.Errorf("%w: signed by %q, want %q", ErrInvalid, env.GetKeyId(), signer)
	}
	pub, ok := k[env.GetKeyId()]
	if !ok {
		return fmt.Errorf("%w: unknown key %q", ErrInvalid, env.GetKeyId())
	}
	signed := pae(env.GetPayloadType(), env.GetPayload())
	if b := env.GetBatch(); b != nil {
		root, err := batchRoot(b, signed)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		signed = batchMessage(b.GetSize(), root)
	}
	if !ed25519.Verify(pub, signed, env.GetSignature()) {
		return fmt.Errorf("%w: bad signature from %q", ErrInvalid, env.GetKeyId())
	}
	if err := proto.Unmarshal(env.GetPayload(), m); err != nil {
		return fmt.Errorf("%w: decode %s: %w", ErrInvalid, want, err)
	}
	return nil
}

// Hash is the hex SHA-256 of an envelope's payload: what a receipt
// reference pins.
func Hash(env *receiptv1.Envelope) string {
	return hexSum(sha256.Sum256(env.GetPayload()))
}

// Digest is the hex SHA-256 of a whole envelope — payload type, payload,
// key id, signature and place in a batch — so that two envelopes with the
// same payload but another signature or signer differ. An envelope signed
// alone digests as it did before batches existed.
func Digest(env *receiptv1.Envelope) string {
	// The parts go into one buffer, each after its length, and are hashed
	// at once: a buffer the size of most envelopes stays on the stack.
	buf := make([]byte, 0, 2048)
	buf = appendPart(buf, env.GetPayloadType())
	buf = appendPart(buf, env.GetPayload())
	buf = appendPart(buf, env.GetKeyId())
	buf = appendPart(buf, env.GetSignature())
	if b := env.GetBatch(); b != nil {
		buf = appendPart(buf, "batch")
		buf = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(buf, 8), b.GetIndex())
		buf = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(buf, 8), b.GetSize())
		for _, p := range b.GetPath() {
			buf = appendPart(buf, p)
		}
	}
	return hexSum(sha256.Sum256(buf))
}

// appendPart appends p's length, then p.
func appendPart[T string | []byte](buf []byte, p T) []byte {
	return append(binary.BigEndian.AppendUint64(buf, uint64(len(p))), p...)
}

// hexSum is a SHA-256 sum in hex.
func hexSum(sum [sha256.Size]byte) string {
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
