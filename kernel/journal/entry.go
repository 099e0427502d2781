package journal

import (
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
)

// hashSize is the size of every hash in the tree (SHA-256).
const hashSize = 32

// Hasher is the tree's RFC 6962 hasher.
var Hasher = rfc6962.DefaultHasher

// ranges builds compact ranges with the tree's hash.
var ranges = &compact.RangeFactory{Hash: Hasher.HashChildren}

// Entry is one record of the log. Its leaf index in the tree is Seq-1.
type Entry struct {
	Seq  int64
	At   time.Time
	Kind string
	Ref  string
	Body []byte
	// LeafHash is the RFC 6962 leaf hash stored with the entry; Verify
	// checks it against the entry's content.
	LeafHash []byte
}

// LeafData is the entry's leaf in the tree: its position (8 bytes,
// big-endian), its time (Unix nanoseconds, 8 bytes, big-endian), then its
// kind, ref and body, each prefixed by its length (8 bytes, big-endian), so
// no two entries encode alike. Any change to any part changes the leaf.
func LeafData(e *Entry) []byte {
	buf := make([]byte, 0, 40+len(e.Kind)+len(e.Ref)+len(e.Body))
	buf = binary.BigEndian.AppendUint64(buf, uint64(e.Seq))
	buf = binary.BigEndian.AppendUint64(buf, uint64(e.At.UnixNano()))
	for _, part := range [][]byte{[]byte(e.Kind), []byte(e.Ref), e.Body} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(part)))
		buf = append(buf, part...)
	}
	return buf
}

// LeafHash is the RFC 6962 leaf hash of the entry's content.
func LeafHash(e *Entry) []byte { return Hasher.HashLeaf(LeafData(e)) }

// TreeHead is the tree over the first Size entries, named by its root
// hash: what a checkpoint signs.
type TreeHead struct {
	Size uint64
	Root []byte
}

// String is the root hash in hex.
func (h TreeHead) String() string { return hex.EncodeToString(h.Root) }

// EmptyRoot is the root hash of the empty tree.
func EmptyRoot() []byte { return Hasher.EmptyRoot() }
