package journal

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/transparency-dev/merkle/compact"
)

// Report is the outcome of a verification.
type Report struct {
	OK bool
	// Entries is how many entries were read.
	Entries int64
	// FirstBad is the first bad entry when it is known exactly; otherwise
	// the bad entry is narrowed to the window FirstBad..LastBad (LastBad
	// equals FirstBad when exact).
	FirstBad, LastBad int64
	Problem           string
	// Head is the recomputed tree head of the whole journal, when OK.
	Head TreeHead
	// Matched counts the trusted tree heads the journal matched.
	Matched int
}

// Verify streams the journal once, in order, with memory bounded by the
// tree's height, and checks that:
//   - the positions run 1, 2, 3… without a gap;
//   - each entry's content gives its stored leaf hash, and the subtree
//     hashes stored with it are those of the entries they cover;
//   - the recomputed root at the size of each trusted head (a verified
//     checkpoint) is that head's root, and the journal is at least as long
//     as every trusted head.
//
// It stops at the first problem and names the first bad entry, or the
// narrowest window it can prove: an edit that left the stored hashes alone
// is named exactly; a rewrite that recomputed every stored hash is caught
// only by a trusted head, between the last head that matched and the first
// that did not, so more checkpoints narrow it further.
func Verify(ctx context.Context, q Querier, trusted []TreeHead) (Report, error) {
	heads := slices.Clone(trusted)
	slices.SortStableFunc(heads, func(a, b TreeHead) int { return cmp.Compare(a.Size, b.Size) })
	v := verifier{rng: ranges.NewEmptyRange(0), heads: heads}
	if r, bad := v.checkHeads(); bad {
		return r, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT `+columns+` FROM journal ORDER BY seq`)
	if err != nil {
		return Report{}, fmt.Errorf("journal verify: %w", err)
	}
	defer rows.Close()
	var (
		e              Entry
		at, kind, ref  sql.RawBytes
		body, hashes   sql.RawBytes
		computed       = make([]byte, 0, 64*hashSize)
		visit          = func(_ compact.NodeID, h []byte) { computed = append(computed, h...) }
		checkCancelled = 0
	)
	for rows.Next() {
		if checkCancelled++; checkCancelled%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return Report{}, err
			}
		}
		if err := rows.Scan(&e.Seq, &at, &kind, &ref, &body, &hashes); err != nil {
			return Report{}, fmt.Errorf("journal verify: %w", err)
		}
		n := v.entries + 1
		if e.Seq != n {
			return v.bad(n, n, "entry %d is missing: the journal goes from entry %d to entry %d", n, n-1, e.Seq), nil
		}
		v.entries = n
		t, err := time.Parse(time.RFC3339Nano, string(at))
		if err != nil {
			return v.bad(n, n, "entry %d has a malformed time %q: it was edited", n, at), nil
		}
		e.At, e.Kind, e.Ref, e.Body = t, string(kind), string(ref), body
		leaf := LeafHash(&e)
		computed = computed[:0]
		if err := v.rng.Append(leaf, visit); err != nil {
			return Report{}, fmt.Errorf("journal verify: %w", err)
		}
		if !bytes.Equal(computed, hashes) {
			if len(hashes) < hashSize || !bytes.Equal(hashes[:hashSize], leaf) {
				return v.bad(n, n, "entry %d (%s %q) does not match its stored leaf hash: it was edited, moved or replaced", n, e.Kind, e.Ref), nil
			}
			// The leaf is right: a subtree hash stored with it is not.
			// Lower levels were compared first, so the stale one covers
			// the first level that differs.
			level := 1
			for level*hashSize+hashSize <= min(len(computed), len(hashes)) &&
				bytes.Equal(computed[level*hashSize:level*hashSize+hashSize], hashes[level*hashSize:level*hashSize+hashSize]) {
				level++
			}
			first := n - int64(1)<<level + 1
			return v.bad(max(first, 1), n, "the stored hash of entries %d..%d does not match them: one of them was changed after entry %d was appended", max(first, 1), n, n), nil
		}
		if r, bad := v.checkHeads(); bad {
			return r, nil
		}
	}
	if err := rows.Err(); err != nil {
		return Report{}, fmt.Errorf("journal verify: %w", err)
	}
	if v.next < len(v.heads) {
		s := int64(v.heads[len(v.heads)-1].Size) // the largest
		removed := fmt.Sprintf("entries %d..%d were", v.entries+1, s)
		if v.entries+1 == s {
			removed = fmt.Sprintf("entry %d was", s)
		}
		return v.bad(v.entries+1, s, "the journal ends at entry %d, but a checkpoint covers %d entries: %s removed", v.entries, s, removed), nil
	}
	return Report{OK: true, Entries: v.entries, Head: TreeHead{Size: uint64(v.entries), Root: v.root()}, Matched: v.count}, nil
}

type verifier struct {
	rng     *compact.Range
	heads   []TreeHead
	next    int   // the first head not reached yet
	entries int64 // entries read
	matched int64 // the largest size whose trusted head matched
	count   int
}

// checkHeads compares the recomputed root with every trusted head of the
// current size.
func (v *verifier) checkHeads() (Report, bool) {
	for v.next < len(v.heads) && int64(v.heads[v.next].Size) == v.entries {
		h := v.heads[v.next]
		root := v.root()
		if !bytes.Equal(root, h.Root) {
			return v.mismatch(int64(h.Size), fmt.Sprintf("the checkpoint of size %d (root %s, recomputed %s)", h.Size, hex.EncodeToString(h.Root), hex.EncodeToString(root))), true
		}
		v.matched, v.next = int64(h.Size), v.next+1
		v.count++
	}
	return Report{}, false
}

// mismatch reports that the tree at size differs from what what says it
// should be, after every earlier head matched.
func (v *verifier) mismatch(size int64, what string) Report {
	if size == 0 {
		return v.bad(0, 0, "%s: the empty log has another root", what)
	}
	first := v.matched + 1
	if first == size {
		return v.bad(first, size, "entry %d does not match %s: it was edited, moved or replaced", first, what)
	}
	upTo := ""
	if v.matched > 0 {
		upTo = fmt.Sprintf(" (entries up to %d match the checkpoint of that size)", v.matched)
	}
	return v.bad(first, size, "entries %d..%d do not match %s%s: the first bad entry is among them", first, size, what, upTo)
}

func (v *verifier) root() []byte {
	if v.entries == 0 {
		return EmptyRoot()
	}
	root, _ := v.rng.GetRootHash(nil) // a range from 0 always has a root
	return root
}

func (v *verifier) bad(first, last int64, format string, args ...any) Report {
	return Report{Entries: v.entries, FirstBad: first, LastBad: last, Problem: fmt.Sprintf(format, args...), Matched: v.count}
}
