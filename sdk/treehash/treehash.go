package treehash

import (
	"crypto/sha256"

	"github.com/transparency-dev/merkle"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Size is the size of every hash in a tree (SHA-256).
const Size = sha256.Size

// Hasher is the RFC 6962 hasher.
var Hasher merkle.LogHasher = hasher{}

type hasher struct{}

// stackLeaf is the longest leaf hashed from a buffer on the stack.
const stackLeaf = 2048

func (hasher) EmptyRoot() []byte { return rfc6962.DefaultHasher.EmptyRoot() }
func (hasher) Size() int         { return Size }

func (hasher) HashLeaf(leaf []byte) []byte {
	if len(leaf) > stackLeaf {
		return rfc6962.DefaultHasher.HashLeaf(leaf)
	}
	buf := make([]byte, 0, 1+stackLeaf)
	buf = append(append(buf, rfc6962.RFC6962LeafHashPrefix), leaf...)
	h := sha256.Sum256(buf)
	return h[:]
}

func (hasher) HashChildren(l, r []byte) []byte {
	if len(l) != Size || len(r) != Size {
		return rfc6962.DefaultHasher.HashChildren(l, r)
	}
	var node [1 + 2*Size]byte
	node[0] = rfc6962.RFC6962NodeHashPrefix
	copy(node[1:], l)
	copy(node[1+Size:], r)
	h := sha256.Sum256(node[:])
	return h[:]
}
