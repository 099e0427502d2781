package treehash_test

import (
	"bytes"
	"testing"

	"github.com/ambitkernel/ambit/sdk/treehash"
	"github.com/transparency-dev/merkle/rfc6962"
)

// TestSameAsLibrary: every hash is the library hasher's, for leaves on
// either side of the stack buffer's size and children of any length.
func TestSameAsLibrary(t *testing.T) {
	lib := rfc6962.DefaultHasher
	for _, n := range []int{0, 1, 31, 2047, 2048, 2049, 10000} {
		leaf := bytes.Repeat([]byte{byte(n)}, n)
		if got, want := treehash.Hasher.HashLeaf(leaf), lib.HashLeaf(leaf); !bytes.Equal(got, want) {
			t.Errorf("HashLeaf of %d bytes = %x, want %x", n, got, want)
		}
	}
	l, r := lib.HashLeaf([]byte("l")), lib.HashLeaf([]byte("r"))
	for _, c := range [][2][]byte{{l, r}, {r, l}, {l[:5], r}, {nil, nil}} {
		if got, want := treehash.Hasher.HashChildren(c[0], c[1]), lib.HashChildren(c[0], c[1]); !bytes.Equal(got, want) {
			t.Errorf("HashChildren(%x, %x) = %x, want %x", c[0], c[1], got, want)
		}
	}
	if !bytes.Equal(treehash.Hasher.EmptyRoot(), lib.EmptyRoot()) || treehash.Hasher.Size() != lib.Size() {
		t.Error("EmptyRoot or Size differ from the library's")
	}
}

func BenchmarkHashLeaf(b *testing.B) {
	leaf := bytes.Repeat([]byte("x"), 800)
	b.ReportAllocs()
	for b.Loop() {
		treehash.Hasher.HashLeaf(leaf)
	}
}
