package canon_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"pgregory.net/rapid"

	"github.com/ambitkernel/ambit/kernel/canon"
)

// sameAsClassifyAll fails t unless the incremental classes are what a full
// classification of s gives.
func sameAsClassifyAll(t interface {
	Helper()
	Fatalf(string, ...any)
}, cls *canon.Classes, s *canon.State, auth canon.Authorities, after string) {
	t.Helper()
	full, incremental := canon.ClassifyAll(s, auth), cls.All()
	same := len(full) == len(incremental)
	for i := 0; same && i < len(full); i++ {
		same = full[i].Class == incremental[i].Class && slices.Equal(full[i].Reasons, incremental[i].Reasons) &&
			proto.Equal(full[i].Item, incremental[i].Item)
	}
	if !same {
		// cmp.Diff only to explain a failure: it is slow.
		t.Fatalf("after %s, incremental classes differ from ClassifyAll (-full +incremental):\n%s", after,
			cmp.Diff(full, incremental, protocmp.Transform()))
	}
	for _, id := range s.IDs() {
		if c, ok := cls.Get(id); !ok || c.Item.GetCanonItemId() != id {
			t.Fatalf("after %s, Get(%q) = %v, %v", after, id, c.Item, ok)
		}
	}
	// Pages, of the classes and of a fresh classification, walked from
	// the first: every item once, in order, as classified in full.
	for _, walk := range []struct {
		name string
		page func(after string) ([]canon.Classified, bool, bool)
	}{
		{"Classes.Page(3)", func(a string) ([]canon.Classified, bool, bool) { return cls.Page(a, 3) }},
		{"ClassifyPage(2)", func(a string) ([]canon.Classified, bool, bool) { return canon.ClassifyPage(s, auth, a, 2) }},
	} {
		got := walkPages(t, "after "+after+", "+walk.name, len(full), walk.page)
		same := len(full) == len(got)
		for i := 0; same && i < len(full); i++ {
			same = full[i].Class == got[i].Class && slices.Equal(full[i].Reasons, got[i].Reasons) && proto.Equal(full[i].Item, got[i].Item)
		}
		if !same {
			t.Fatalf("after %s, %s walked differs from ClassifyAll (-full +paged):\n%s", after, walk.name, cmp.Diff(full, got, protocmp.Transform()))
		}
		if _, _, ok := walk.page("no-such-item"); ok {
			t.Fatalf("after %s, %s after an unknown item is ok", after, walk.name)
		}
	}
}

// TestClassesFollowFixtures updates the classes after every transition of
// every shipped fixture, refused ones included, and compares them with a
// full classification.
func TestClassesFollowFixtures(t *testing.T) {
	fixtures, err := canon.ShippedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		t.Run(f.Name, func(t *testing.T) {
			s := &canon.State{}
			cls := canon.NewClasses(s, f.Authorities)
			for i, st := range f.Steps {
				_ = s.Apply(st.Transition, f.Authorities)
				cls.Update(s)
				sameAsClassifyAll(t, cls, s, f.Authorities, fmt.Sprintf("step %d (%s)", i, st.Kind))
			}
		})
	}
}

// applyAll applies ops to s, updating cls after a random number of them
// (a publication may follow several transitions), and checks the classes
// after every update.
func applyAll(t *rapid.T, ops []canon.Transition, auth canon.Authorities) {
	s := &canon.State{}
	cls := canon.NewClasses(s, auth)
	for i, op := range ops {
		if op.Item != nil && strings.HasPrefix(op.Item.GetProvenanceRef(), "ref:") && rapid.Bool().Draw(t, "cites") {
			// Provenance that names another item of the ledger, which may
			// be recorded only later.
			op.Item.ProvenanceRef = "item:" + rapid.SampledFrom([]string{"A", "B", "C", "D"}).Draw(t, "cited")
		}
		_ = s.Apply(op, auth)
		if rapid.IntRange(0, 2).Draw(t, "publish") > 0 || i == len(ops)-1 {
			cls.Update(s)
			sameAsClassifyAll(t, cls, s, auth, op.Kind.String())
		}
	}
	// Another state is classified afresh.
	other := &canon.State{}
	cls.Update(other)
	sameAsClassifyAll(t, cls, other, auth, "a switch to an empty state")
}

// TestClassesFollowRandomLedgers is the property: for random transition
// sequences (conflicts, supersession, handoffs, rejections, provenance
// citing other items), incremental classification equals ClassifyAll after
// every update.
func TestClassesFollowRandomLedgers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Bytes from a drawn seed reach deeper into the ledger's rules
		// than rapid's small-biased bytes; the seed is what shrinks.
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0))
		data := make([]byte, rapid.IntRange(0, 800).Draw(t, "len"))
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		applyAll(t, ledgerOps(data), defaultAuth())
	})
}

// FuzzClasses checks the same property on fuzzed transition sequences.
func FuzzClasses(f *testing.F) {
	addLedgerSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		auth := defaultAuth()
		s := &canon.State{}
		cls := canon.NewClasses(s, auth)
		for _, op := range ledgerOps(data) {
			_ = s.Apply(op, auth)
			cls.Update(s)
			sameAsClassifyAll(t, cls, s, auth, op.Kind.String())
		}
	})
}

// TestClassesOfALargeLedger: a ledger large enough to be classified on
// several cores, with conflicts that reach across the shares, gets the
// classes one classifier gives.
func TestClassesOfALargeLedger(t *testing.T) {
	auth := defaultAuth()
	s := &canon.State{}
	const n = 40_000
	for i := range n {
		var mods []func(*ledgerv1.CanonItem)
		if i%97 == 96 {
			mods = append(mods, withConflict(fmt.Sprintf("POL-%d", i/3)))
		}
		id := fmt.Sprintf("POL-%d", i)
		if err := s.Apply(propose(2*i, owner, policy(id, "limit GBP 500", mods...)), auth); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := s.Apply(promote(2*i+1, owner, id), auth); err != nil && i%97 != 96 {
				t.Fatal(err)
			}
		}
	}
	if d := cmp.Diff(canon.ClassifyAll(s, auth), canon.NewClasses(s, auth).All(), protocmp.Transform()); d != "" {
		t.Fatalf("(-ClassifyAll +Classes):\n%s", d)
	}
}
