package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"time"

	"github.com/ambitkernel/ambit/sdk/treehash"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
)

// hashSize is the size of every hash in the tree (SHA-256).
const hashSize = treehash.Size

// Hasher is the tree's RFC 6962 hasher.
var Hasher = treehash.Hasher

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
	var buf bytes.Buffer
	buf.Grow(40 + len(e.Kind) + len(e.Ref) + len(e.Body))
	writeLeaf(&buf, e)
	return buf.Bytes()
}

// LeafHash is the RFC 6962 leaf hash of the entry's content: of its
// LeafData, written to the digest part by part instead of copied into one
// buffer first.
func LeafHash(e *Entry) []byte {
	d := sha256.New()
	d.Write(leafPrefix)
	writeLeaf(d, e)
	return d.Sum(make([]byte, 0, hashSize))
}

// leafPrefix is RFC 6962's domain prefix of a leaf hash.
var leafPrefix = []byte{rfc6962.RFC6962LeafHashPrefix}

// writeLeaf writes the entry's LeafData to w, part by part.
func writeLeaf(w io.Writer, e *Entry) {
	var n [8]byte
	put := func(v int64) {
		binary.BigEndian.PutUint64(n[:], uint64(v))
		w.Write(n[:])
	}
	put(e.Seq)
	put(e.At.UnixNano())
	for _, part := range [...]string{e.Kind, e.Ref} {
		put(int64(len(part)))
		io.WriteString(w, part)
	}
	put(int64(len(e.Body)))
	w.Write(e.Body)
}

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
