package canon_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/ambitkernel/ambit/kernel/canon"
)

// snapshotCase is a sequence of transitions, some of which the ledger
// refuses, and the authorities they run under.
type snapshotCase struct {
	name  string
	auth  canon.Authorities
	steps []canon.Transition
}

// snapshotCases are the conformance fixtures and transition sequences
// decoded from random bytes as the fuzz target decodes them.
func snapshotCases(t *testing.T) []snapshotCase {
	t.Helper()
	fixtures, err := canon.ShippedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	var out []snapshotCase
	for _, f := range fixtures {
		c := snapshotCase{name: f.Name, auth: f.Authorities}
		for _, s := range f.Steps {
			c.steps = append(c.steps, s.Transition)
		}
		out = append(out, c)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 24 {
		data := make([]byte, 40+rng.IntN(80))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		out = append(out, snapshotCase{name: fmt.Sprintf("random-%d", i), auth: defaultAuth(), steps: ledgerOps(data)})
	}
	return out
}

// outcome is what applying a transition gave: its refusal code, or "".
func outcome(s *canon.State, t canon.Transition, auth canon.Authorities) string {
	if err := s.Apply(t, auth); err != nil {
		if canon.Code(err) == "" {
			return "uncoded: " + err.Error()
		}
		return canon.Code(err)
	}
	return ""
}

func encode(t *testing.T, s *canon.State, auth canon.Authorities) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.Snapshot().WriteTo(&b, auth); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// filled classifies every item of s, each compacted contract given back
// its content, so that a compacted and a full state compare as equal when
// they hold the same ledger.
func filled(t *testing.T, s *canon.State, auth canon.Authorities, content canon.ContentFunc) []canon.Classified {
	t.Helper()
	out := canon.ClassifyAll(s, auth)
	for i, c := range out {
		if !canon.Compacted(c.Item) {
			continue
		}
		contract, err := content(c.Item.GetCanonItemId())
		if err != nil {
			t.Fatal(err)
		}
		if out[i].Item, err = canon.WithContent(c.Item, contract); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestSnapshotFoldsLikeReplay cuts every sequence at every step: a
// compacted state of the steps before the cut, written to a snapshot and
// read back, then given the steps after it, must accept and refuse exactly
// what the uninterrupted fold does, and end in the same facts and classes.
func TestSnapshotFoldsLikeReplay(t *testing.T) {
	for _, c := range snapshotCases(t) {
		t.Run(c.name, func(t *testing.T) {
			full := &canon.State{}
			var want []string
			for _, tr := range c.steps {
				want = append(want, outcome(full, tr, c.auth))
			}
			// The journal, as far as content goes: what the full fold
			// recorded.
			loads := 0
			content := func(id string) (*contractv1.Contract, error) {
				loads++
				it, ok := full.Item(id)
				if !ok || it.GetContract() == nil {
					return nil, fmt.Errorf("no contract %q", id)
				}
				return it.GetContract(), nil
			}
			checkRequests(t, "the full fold", full, full)
			wantBytes := encode(t, full, c.auth)
			wantClasses := canon.ClassifyAll(full, c.auth)
			for cut := 0; cut <= len(c.steps); cut++ {
				before := &canon.State{}
				for _, tr := range c.steps[:cut] {
					outcome(before, tr, c.auth)
				}
				before.Compact()
				restored, err := canon.ReadSnapshot(bytes.NewReader(encode(t, before, c.auth)), c.auth, content)
				if err != nil {
					t.Fatalf("cut %d: %v", cut, err)
				}
				for i, tr := range c.steps[cut:] {
					if got := outcome(restored, tr, c.auth); got != want[cut+i] {
						t.Fatalf("cut %d, step %d (%s): got %q, the full fold %q", cut, cut+i, tr.Kind, got, want[cut+i])
					}
				}
				if got := encode(t, restored, c.auth); !bytes.Equal(got, wantBytes) {
					t.Fatalf("cut %d: the restored state's facts differ from the full fold's", cut)
				}
				if d := cmp.Diff(wantClasses, filled(t, restored, c.auth, content), protocmp.Transform()); d != "" {
					t.Fatalf("cut %d: classes differ (-full +restored):\n%s", cut, d)
				}
				checkRequests(t, fmt.Sprintf("cut %d", cut), restored, full)
				cl := canon.NewClasses(restored, c.auth)
				if d := cmp.Diff(canon.ClassifyAll(restored, c.auth), cl.All(), protocmp.Transform()); d != "" {
					t.Fatalf("cut %d: Classes of the restored state differ from ClassifyAll:\n%s", cut, d)
				}
				// A restored state's pages begin after an item as the full
				// fold's do.
				all := canon.ClassifyAll(restored, c.auth)
				paged := walkPages(t, fmt.Sprintf("cut %d, ClassifyPage(2)", cut), len(all), func(after string) ([]canon.Classified, bool, bool) {
					return canon.ClassifyPage(restored, c.auth, after, 2)
				})
				if d := cmp.Diff(all, paged, protocmp.Transform(), cmpopts.EquateEmpty()); d != "" {
					t.Fatalf("cut %d: pages of the restored state differ from ClassifyAll:\n%s", cut, d)
				}
			}
			t.Logf("%d contracts loaded on demand", loads)
		})
	}
}

// checkRequests checks that s finds by provenance_ref the boundary-change
// requests a scan of want finds, in the same order.
func checkRequests(t *testing.T, at string, s, want *canon.State) {
	t.Helper()
	scan := map[string][]string{}
	for _, id := range want.IDs() {
		if it, _ := want.Item(id); it.GetKind() == ledgerv1.ItemKind_ITEM_KIND_BOUNDARY_REQUEST {
			scan[it.GetProvenanceRef()] = append(scan[it.GetProvenanceRef()], id)
		}
	}
	for ref, ids := range scan {
		if d := cmp.Diff(ids, s.BoundaryRequests(ref)); d != "" {
			t.Fatalf("%s: boundary requests of %q (-scan +index):\n%s", at, ref, d)
		}
	}
	if got := s.BoundaryRequests("agent:nobody/task:none"); len(got) != 0 {
		t.Fatalf("%s: requests of an unknown ref: %v", at, got)
	}
}

func TestReadSnapshotRefuses(t *testing.T) {
	auth := defaultAuth()
	s := &canon.State{}
	for _, tr := range []canon.Transition{
		propose(1, owner, contractItem("CTR-1", refundContract())),
		promote(2, owner, "CTR-1"),
		propose(3, owner, policy("POL-1", "limit GBP 500")),
	} {
		if err := s.Apply(tr, auth); err != nil {
			t.Fatal(err)
		}
	}
	good := encode(t, s, auth)
	other := canon.Authorities{ledgerv1.Scope_SCOPE_TASK: {"someone-else"}}
	cases := []struct {
		name string
		data []byte
		auth canon.Authorities
	}{
		{"empty", nil, auth},
		{"not a snapshot", []byte("hello, ledger"), auth},
		{"truncated", good[:len(good)/2], auth},
		{"no trailer", good[:len(good)-3], auth},
		{"trailing data", append(bytes.Clone(good), 0), auth},
		{"other authorities", good, other},
		// The policy's id made the contract's: two items of one id.
		{"repeated id", bytes.ReplaceAll(good, []byte("POL-1"), []byte("CTR-1")), auth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := canon.ReadSnapshot(bytes.NewReader(c.data), c.auth, nil)
			if !errors.Is(err, canon.ErrSnapshot) {
				t.Fatalf("got %v, want ErrSnapshot", err)
			}
		})
	}
	if _, err := canon.ReadSnapshot(bytes.NewReader(good), auth, nil); err != nil {
		t.Fatalf("the good snapshot: %v", err)
	}
}

// FuzzReadSnapshot feeds corrupt snapshots: nothing may panic, and what
// does decode must write back to the same bytes.
func FuzzReadSnapshot(f *testing.F) {
	auth := defaultAuth()
	s := &canon.State{}
	_ = s.Apply(propose(1, owner, contractItem("CTR-1", refundContract())), auth)
	_ = s.Apply(promote(2, owner, "CTR-1"), auth)
	_ = s.Apply(derive(3, owner, "CTR-1", childTemplate("CTR-1a"), nil), auth)
	var b bytes.Buffer
	if err := s.Snapshot().WriteTo(&b, auth); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := canon.ReadSnapshot(bytes.NewReader(data), auth, nil)
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := st.Snapshot().WriteTo(&again, auth); err != nil {
			t.Fatal(err)
		}
		if _, err := canon.ReadSnapshot(bytes.NewReader(again.Bytes()), auth, nil); err != nil {
			t.Fatalf("a snapshot written from a read one does not read: %v", err)
		}
	})
}
