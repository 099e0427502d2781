package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// ErrInvalid marks a checkpoint that does not verify.
var ErrInvalid = errors.New("checkpoint does not verify")

// Checkpoint is a signed tree head of the log.
type Checkpoint struct {
	Origin string
	Head   journal.TreeHead
	// Note is the signed note, exactly as written and served.
	Note []byte
}

// CheckOrigin refuses an origin a note key cannot be named with: empty,
// with spaces, a '+' or a control character.
func CheckOrigin(origin string) error {
	if origin == "" || strings.ContainsRune(origin, '+') || strings.IndexFunc(origin, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) >= 0 {
		return fmt.Errorf("checkpoint origin %q: must be non-empty, without spaces, '+' or control characters", origin)
	}
	return nil
}

// Signer signs the checkpoints of one log.
type Signer struct {
	origin string
	signer note.Signer
	verify note.Verifier
}

// NewSigner signs checkpoints of the log named origin with the kernel's
// Ed25519 key. The receipts' envelopes are signed with the same key, but
// over "ambit-envelope-v1" followed by binary lengths, which no note text
// (printable lines, first the origin) can begin with: the two kinds of
// signature cannot stand for each other.
func NewSigner(origin string, key ed25519.PrivateKey) (*Signer, error) {
	if err := CheckOrigin(origin); err != nil {
		return nil, err
	}
	vkey, err := note.NewEd25519VerifierKey(origin, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	// A note signer key is the verifier key's name and hash with the
	// private seed: "PRIVATE+KEY+<name>+<hash>+<base64(alg, seed)>".
	parts := strings.Split(vkey, "+")
	skey := "PRIVATE+KEY+" + parts[0] + "+" + parts[1] + "+" + base64.StdEncoding.EncodeToString(append([]byte{1}, key.Seed()...))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("checkpoint signer: %w", err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("checkpoint signer: %w", err)
	}
	return &Signer{origin: origin, signer: s, verify: v}, nil
}

// Origin is the log's origin.
func (s *Signer) Origin() string { return s.origin }

// Verifier checks the signer's checkpoints.
func (s *Signer) Verifier() note.Verifier { return s.verify }

// Sign signs a tree head.
func (s *Signer) Sign(h journal.TreeHead) (Checkpoint, error) {
	text := log.Checkpoint{Origin: s.origin, Size: h.Size, Hash: h.Root}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(text)}, s.signer)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("sign checkpoint %d: %w", h.Size, err)
	}
	return Checkpoint{Origin: s.origin, Head: h, Note: signed}, nil
}

// NewVerifier checks the checkpoints of the log named origin, signed with
// the kernel's key pub.
func NewVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	if err := CheckOrigin(origin); err != nil {
		return nil, err
	}
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	return note.NewVerifier(vkey)
}

// Open verifies a checkpoint: signed by v under v's name, the log's origin,
// with a root hash of the tree's size, and encoded canonically (base64
// signatures without stray bits), so that any changed byte is refused.
func Open(data []byte, v note.Verifier) (Checkpoint, error) {
	cp, _, _, err := log.ParseCheckpoint(data, v.Name(), v)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(cp.Hash) != 32 {
		return Checkpoint{}, fmt.Errorf("%w: root hash of %d bytes", ErrInvalid, len(cp.Hash))
	}
	// The signature block follows the last blank line; every line must be
	// "— name base64", its base64 strict.
	split := bytes.LastIndex(data, []byte("\n\n"))
	for _, line := range strings.Split(strings.TrimSuffix(string(data[split+2:]), "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return Checkpoint{}, fmt.Errorf("%w: malformed signature line", ErrInvalid)
		}
		if _, err := base64.StdEncoding.Strict().DecodeString(line[i+1:]); err != nil {
			return Checkpoint{}, fmt.Errorf("%w: signature is not canonical base64", ErrInvalid)
		}
	}
	return Checkpoint{Origin: cp.Origin, Head: journal.TreeHead{Size: cp.Size, Root: cp.Hash}, Note: data}, nil
}
