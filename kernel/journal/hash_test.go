package journal_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/transparency-dev/merkle/rfc6962"
	"pgregory.net/rapid"
)

// TestHashesAreRFC6962: the journal's hasher, which hashes interior nodes
// on the stack, and LeafHash, which streams an entry's parts into the
// digest, give exactly what RFC 6962's reference hasher gives over the
// same bytes, for hashes of any length and entries of any content.
func TestHashesAreRFC6962(t *testing.T) {
	ref := rfc6962.DefaultHasher
	rapid.Check(t, func(t *rapid.T) {
		l := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "left")
		r := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "right")
		if rapid.Bool().Draw(t, "hash-sized") {
			l, r = ref.HashLeaf(l), ref.HashLeaf(r)
		}
		if got, want := journal.Hasher.HashChildren(l, r), ref.HashChildren(l, r); !bytes.Equal(got, want) {
			t.Fatalf("HashChildren(%x, %x) = %x, want %x", l, r, got, want)
		}
		e := journal.Entry{
			Seq:  rapid.Int64().Draw(t, "seq"),
			At:   time.Unix(0, rapid.Int64().Draw(t, "at")),
			Kind: rapid.String().Draw(t, "kind"),
			Ref:  rapid.String().Draw(t, "ref"),
			Body: rapid.SliceOf(rapid.Byte()).Draw(t, "body"),
		}
		if got, want := journal.LeafHash(&e), ref.HashLeaf(journal.LeafData(&e)); !bytes.Equal(got, want) {
			t.Fatalf("LeafHash(%+v) = %x, want %x", e, got, want)
		}
	})
	if got, want := journal.Hasher.EmptyRoot(), ref.EmptyRoot(); !bytes.Equal(got, want) {
		t.Errorf("EmptyRoot = %x, want %x", got, want)
	}
}
