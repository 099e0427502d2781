package journal_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/google/go-cmp/cmp"
	"github.com/transparency-dev/merkle/proof"
	_ "modernc.org/sqlite"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if err := journal.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// entry is the i-th (from 0) entry of the test logs.
func entry(i int) journal.Entry {
	return journal.Entry{At: t0.Add(time.Duration(i) * time.Second), Kind: "decision", Ref: fmt.Sprintf("dec-%03d", i), Body: []byte{byte(i), 1, 2}}
}

// appendAll appends entries in one transaction each, and returns the tree
// head after every append (heads[n] is the tree of n entries).
func appendAll(t testing.TB, db *sql.DB, entries []journal.Entry) []journal.TreeHead {
	t.Helper()
	ctx := context.Background()
	heads := []journal.TreeHead{{Root: journal.EmptyRoot()}}
	for _, e := range entries {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := journal.Append(ctx, tx, e.At, e.Kind, e.Ref, e.Body); err != nil {
			t.Fatal(err)
		}
		h, err := journal.Head(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	return heads
}

func openLog(t testing.TB, n int) (*sql.DB, []journal.TreeHead) {
	t.Helper()
	db := openDB(t)
	var es []journal.Entry
	for i := range n {
		es = append(es, entry(i))
	}
	return db, appendAll(t, db, es)
}

// mth is RFC 6962's Merkle tree hash, written from the RFC's definition as
// an independent reference.
func mth(leaves [][]byte) []byte {
	switch n := len(leaves); n {
	case 0:
		return journal.EmptyRoot()
	case 1:
		return journal.Hasher.HashLeaf(leaves[0])
	default:
		k := 1
		for k*2 < n {
			k *= 2
		}
		return journal.Hasher.HashChildren(mth(leaves[:k]), mth(leaves[k:]))
	}
}

func TestAppendFollowsRFC6962(t *testing.T) {
	ctx := context.Background()
	db, heads := openLog(t, 70)
	var leaves [][]byte
	es, err := journal.Read(ctx, db, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= 70; n++ {
		if n > 0 {
			e := es[n-1]
			if e.Seq != int64(n) || !e.At.Equal(entry(n-1).At) {
				t.Fatalf("entry %d read back as %+v", n, e)
			}
			if !bytes.Equal(e.LeafHash, journal.LeafHash(&e)) {
				t.Fatalf("entry %d: stored leaf hash differs from its content's", n)
			}
			leaves = append(leaves, journal.LeafData(&e))
		}
		want := mth(leaves)
		if heads[n].Size != uint64(n) || !bytes.Equal(heads[n].Root, want) {
			t.Fatalf("head after %d appends = %d %x, want the RFC 6962 root %x", n, heads[n].Size, heads[n].Root, want)
		}
		got, err := journal.RootAt(ctx, db, uint64(n))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("RootAt(%d) = %x, %v; want %x", n, got, err, want)
		}
	}
	if _, err := journal.RootAt(ctx, db, 71); err == nil {
		t.Error("RootAt beyond the head succeeded")
	}
}

// TestProofs checks every inclusion and consistency proof of every tree
// size up to 70 with the merkle library's verifier.
func TestProofs(t *testing.T) {
	ctx := context.Background()
	const n = 70
	db, heads := openLog(t, n)
	es, err := journal.Read(ctx, db, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for size := uint64(1); size <= n; size++ {
		root := heads[size].Root
		for i := uint64(0); i < size; i++ {
			p, err := journal.InclusionProof(ctx, db, i, size)
			if err != nil {
				t.Fatalf("InclusionProof(%d, %d): %v", i, size, err)
			}
			if err := proof.VerifyInclusion(journal.Hasher, i, size, journal.LeafHash(&es[i]), p, root); err != nil {
				t.Fatalf("inclusion of %d in %d: %v", i, size, err)
			}
			// The proof is for this leaf only.
			other := es[(i+1)%size]
			if size > 1 && proof.VerifyInclusion(journal.Hasher, i, size, journal.LeafHash(&other), p, root) == nil {
				t.Fatalf("inclusion proof of %d in %d also proves another leaf", i, size)
			}
		}
		for size1 := uint64(0); size1 <= size; size1++ {
			p, err := journal.ConsistencyProof(ctx, db, size1, size)
			if err != nil {
				t.Fatalf("ConsistencyProof(%d, %d): %v", size1, size, err)
			}
			if err := proof.VerifyConsistency(journal.Hasher, size1, size, p, heads[size1].Root, root); err != nil {
				t.Fatalf("consistency %d → %d: %v", size1, size, err)
			}
			if size1 > 0 && size1 < size && proof.VerifyConsistency(journal.Hasher, size1, size, p, heads[size1-1].Root, root) == nil {
				t.Fatalf("consistency proof %d → %d accepts the root of size %d", size1, size, size1-1)
			}
		}
	}
	for _, bad := range [][2]uint64{{n, n}, {0, n + 1}} {
		if _, err := journal.InclusionProof(ctx, db, bad[0], bad[1]); err == nil {
			t.Errorf("InclusionProof(%d, %d) succeeded", bad[0], bad[1])
		}
	}
	if _, err := journal.ConsistencyProof(ctx, db, 3, n+1); err == nil {
		t.Error("ConsistencyProof beyond the head succeeded")
	}
	if _, err := journal.ConsistencyProof(ctx, db, 5, 3); err == nil {
		t.Error("ConsistencyProof from a larger size succeeded")
	}
}

// rewrite is the strongest tamperer: it rebuilds the whole journal, every
// stored hash and the head included, from entries changed by f.
func rewrite(f func([]journal.Entry) []journal.Entry) func(t *testing.T, db *sql.DB) {
	return func(t *testing.T, db *sql.DB) {
		es, err := journal.Read(context.Background(), db, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`DELETE FROM journal`); err != nil {
			t.Fatal(err)
		}
		appendAll(t, db, f(es))
	}
}

func sqlTamper(stmts ...string) func(t *testing.T, db *sql.DB) {
	return func(t *testing.T, db *sql.DB) {
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("tamper %q: %v", s, err)
			}
		}
	}
}

// TestVerify tampers with a 50-entry journal in every way, against
// checkpoints of sizes 10, 20, 30, 40 and 50 (or the given ones), and
// checks which entry, or window of entries, is named.
func TestVerify(t *testing.T) {
	every10 := []uint64{10, 20, 30, 40, 50}
	tests := []struct {
		name        string
		tamper      func(t *testing.T, db *sql.DB)
		checkpoints []uint64 // nil: every10
		first, last int64    // 0: the journal verifies
		words       string
	}{
		{name: "intact"},
		{name: "intact, no checkpoint", checkpoints: []uint64{}},
		{name: "truncated: last 1", tamper: rewrite(func(es []journal.Entry) []journal.Entry { return es[:49] }), first: 50, last: 50, words: "removed"},
		{name: "truncated: last 5", tamper: rewrite(func(es []journal.Entry) []journal.Entry { return es[:45] }), first: 46, last: 50, words: "removed"},
		{name: "truncated: half", tamper: rewrite(func(es []journal.Entry) []journal.Entry { return es[:25] }), first: 26, last: 50, words: "removed"},
		{name: "truncated: all", tamper: rewrite(func(es []journal.Entry) []journal.Entry { return nil }), first: 1, last: 50, words: "removed"},
		{name: "truncated, only by SQL", tamper: sqlTamper(`DELETE FROM journal WHERE seq > 45`), first: 46, last: 50, words: "removed"},
		{name: "truncated, no checkpoint: undetectable", tamper: sqlTamper(`DELETE FROM journal WHERE seq > 45`), checkpoints: []uint64{}},
		{name: "rewritten suffix", tamper: rewrite(func(es []journal.Entry) []journal.Entry {
			es[36].Body = []byte("forged")
			return es
		}), first: 31, last: 40, words: "among them"},
		{name: "rewritten suffix, one checkpoint", tamper: rewrite(func(es []journal.Entry) []journal.Entry {
			es[36].Body = []byte("forged")
			return es
		}), checkpoints: []uint64{50}, first: 1, last: 50, words: "among them"},
		{name: "rewritten suffix, a checkpoint per entry", tamper: rewrite(func(es []journal.Entry) []journal.Entry {
			es[36].Ref = "dec-forged"
			return es
		}), checkpoints: sizes(1, 50), first: 37, last: 37, words: "does not match the checkpoint of size 37"},
		{name: "rewritten suffix, no checkpoint: undetectable", tamper: rewrite(func(es []journal.Entry) []journal.Entry {
			es[36].Body = []byte("forged")
			return es
		}), checkpoints: []uint64{}},
		{name: "swapped, rewritten", tamper: rewrite(func(es []journal.Entry) []journal.Entry {
			es[22], es[23] = es[23], es[22]
			return es
		}), first: 21, last: 30, words: "among them"},
		{name: "inserted, rewritten", tamper: rewrite(func(es []journal.Entry) []journal.Entry {
			return append(es[:12:12], append([]journal.Entry{entry(99)}, es[12:]...)...)
		}), first: 11, last: 20, words: "among them"},
		{name: "edited body", tamper: sqlTamper(`UPDATE journal SET body = x'ff' WHERE seq = 37`), first: 37, last: 37, words: "edited"},
		{name: "edited kind", tamper: sqlTamper(`UPDATE journal SET kind = 'effect' WHERE seq = 3`), first: 3, last: 3, words: "edited"},
		{name: "edited time", tamper: sqlTamper(`UPDATE journal SET recorded_at = '2031-01-01T00:00:00Z' WHERE seq = 4`), first: 4, last: 4, words: "edited"},
		{name: "malformed time", tamper: sqlTamper(`UPDATE journal SET recorded_at = 'yesterday' WHERE seq = 4`), first: 4, last: 4, words: "malformed"},
		{name: "swapped rows", tamper: sqlTamper(`UPDATE journal SET seq = 100 WHERE seq = 23`, `UPDATE journal SET seq = 23 WHERE seq = 24`, `UPDATE journal SET seq = 24 WHERE seq = 100`), first: 23, last: 23, words: "moved"},
		{name: "removed from the middle", tamper: sqlTamper(`DELETE FROM journal WHERE seq = 12`), first: 12, last: 12, words: "missing"},
		{name: "stored subtree hash edited", tamper: sqlTamper(`UPDATE journal SET hashes = substr(hashes, 1, 64) || zeroblob(32) WHERE seq = 16`), first: 13, last: 16, words: "entries 13..16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, heads := openLog(t, 50)
			var trusted []journal.TreeHead
			cps := tt.checkpoints
			if cps == nil {
				cps = every10
			}
			for _, s := range cps {
				trusted = append(trusted, heads[s])
			}
			if tt.tamper != nil {
				tt.tamper(t, db)
			}
			r, err := journal.Verify(context.Background(), db, trusted)
			if err != nil {
				t.Fatal(err)
			}
			if tt.first == 0 {
				if !r.OK || r.Matched != len(trusted) {
					t.Fatalf("got %+v, want OK against %d checkpoints", r, len(trusted))
				}
				return
			}
			got := []any{r.OK, r.FirstBad, r.LastBad}
			if diff := cmp.Diff([]any{false, tt.first, tt.last}, got); diff != "" || !strings.Contains(r.Problem, tt.words) {
				t.Errorf("got %+v\nwant entries %d..%d named with %q (-want +got):\n%s", r, tt.first, tt.last, tt.words, diff)
			}
		})
	}
}

func sizes(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestVerifyIntactHead(t *testing.T) {
	db, heads := openLog(t, 33)
	r, err := journal.Verify(context.Background(), db, heads)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Entries != 33 || r.Head.Size != 33 || !bytes.Equal(r.Head.Root, heads[33].Root) || r.Matched != 34 {
		t.Errorf("Verify = %+v, want OK with head %x", r, heads[33].Root)
	}
	r, err = journal.Verify(context.Background(), openDB(t), []journal.TreeHead{{Root: journal.EmptyRoot()}})
	if err != nil || !r.OK || r.Entries != 0 {
		t.Errorf("Verify of an empty journal = %+v, %v", r, err)
	}
}

func TestMigrateRefusesTheHashChain(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE journal (seq INTEGER PRIMARY KEY, recorded_at TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL, body BLOB NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := journal.Migrate(context.Background(), db); err != journal.ErrChain {
		t.Errorf("Migrate over a hash chain = %v, want ErrChain", err)
	}
}

func TestReadRef(t *testing.T) {
	db := openDB(t)
	appendAll(t, db, []journal.Entry{
		{At: t0, Kind: "capability", Ref: "cap-1", Body: []byte("a")},
		{At: t0, Kind: "redeem", Ref: "cap-1", Body: []byte("b")},
		{At: t0, Kind: "decision", Ref: "dec-1", Body: []byte("c")},
	})
	es, err := journal.ReadRef(context.Background(), db, "cap-1", "capability", "decision")
	if err != nil || len(es) != 1 || es[0].Seq != 1 {
		t.Errorf("ReadRef(cap-1) = %+v, %v; want the capability entry only", es, err)
	}
}

// TestReadRefs reads the entries of more refs than one statement binds:
// each ref's entries of the kinds asked, in order, and no other's.
func TestReadRefs(t *testing.T) {
	db := openDB(t)
	const n = 1_203
	var es []journal.Entry
	var refs []string
	for i := range n {
		ref := fmt.Sprintf("item-%04d", i)
		es = append(es, journal.Entry{At: t0, Kind: "canon", Ref: ref, Body: []byte("propose " + ref)},
			journal.Entry{At: t0, Kind: "other", Ref: ref, Body: []byte("other " + ref)})
		if i%3 != 0 {
			refs = append(refs, ref)
		}
	}
	es = append(es, journal.Entry{At: t0, Kind: "canon", Ref: "item-0001", Body: []byte("promote item-0001")})
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if _, err := journal.Append(ctx, tx, e.At, e.Kind, e.Ref, e.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := journal.ReadRefs(ctx, db, append(refs, "no-such-ref"), "canon")
	if err != nil {
		t.Fatal(err)
	}
	byRef := map[string][]journal.Entry{}
	for _, e := range got {
		byRef[e.Ref] = append(byRef[e.Ref], e)
	}
	if len(byRef) != len(refs) {
		t.Fatalf("entries of %d refs, want %d", len(byRef), len(refs))
	}
	for _, ref := range refs {
		got := byRef[ref]
		if len(got) == 0 || string(got[0].Body) != "propose "+ref || slices.ContainsFunc(got, func(e journal.Entry) bool { return e.Kind != "canon" }) {
			t.Fatalf("entries of %s: %+v; want its canon entries, its proposal first", ref, got)
		}
		if ref != "item-0001" && len(got) != 1 {
			t.Fatalf("entries of %s: %d, want its proposal alone", ref, len(got))
		}
	}
	if got := byRef["item-0001"]; len(got) != 2 || string(got[1].Body) != "promote item-0001" {
		t.Fatalf("item-0001: %d entries, want its proposal then its promotion", len(got))
	}
	if got, err := journal.ReadRefs(ctx, db, nil, "canon"); err != nil || len(got) != 0 {
		t.Fatalf("ReadRefs of no ref = %d entries, %v", len(got), err)
	}
}

// TestRefTail: a ref's tail is its run of lowercase hex digits at the end,
// the time-ordered part of the identifiers Ambit issues.
func TestRefTail(t *testing.T) {
	for ref, want := range map[string]string{
		"cap-0193a1b2c3d4e5f6a7b8c9d0": "0193a1b2c3d4e5f6a7b8c9d0",
		"CTR-task-01":                  "01",
		"ev-ABC":                       "",
		"00ff":                         "00ff",
		"":                             "",
		"dec-":                         "",
		"café-0a":                      "0a",
	} {
		if got := journal.RefTail(ref); got != want {
			t.Errorf("RefTail(%q) = %q, want %q", ref, got, want)
		}
	}
}

// TestReadRefsByTail: refs that share a tail, or have none, are each
// found alone (TestRefIndexKeysTails checks the index they are found
// through).
func TestReadRefsByTail(t *testing.T) {
	db := openDB(t)
	refs := []string{"task-01", "CTR-task-01", "x01", "ev-ABC", "ev-XYZ", "00ff", "cap-0193a1b2c3d4e5f6a7b8c9d0", "café-0a"}
	var es []journal.Entry
	for _, ref := range refs {
		es = append(es, journal.Entry{At: t0, Kind: "k", Ref: ref, Body: []byte(ref)})
	}
	appendAll(t, db, es)
	ctx := context.Background()
	for _, ref := range refs {
		got, err := journal.ReadRef(ctx, db, ref)
		if err != nil || len(got) != 1 || string(got[0].Body) != ref {
			t.Errorf("ReadRef(%q) = %+v, %v; want its one entry", ref, got, err)
		}
	}
	got, err := journal.ReadRefs(ctx, db, []string{"x01", "task-01", "no-01"})
	if err != nil || len(got) != 2 || got[0].Ref != "task-01" || got[1].Ref != "x01" {
		t.Errorf("ReadRefs(x01, task-01, no-01) = %+v, %v; want the entries of task-01 and x01, in order", got, err)
	}
}
