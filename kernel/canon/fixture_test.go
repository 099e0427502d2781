package canon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/ambitkernel/ambit/kernel/canon"
)

// TestShippedFixtures is the ledger's conformance corpus: every shipped
// fixture must pass, and every failing check is reported.
func TestShippedFixtures(t *testing.T) {
	fixtures, err := canon.ShippedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) != 14 {
		t.Errorf("got %d shipped fixtures, want the seed's 8, its 4 shortcuts and the 2 of contraction debt", len(fixtures))
	}
	for _, f := range fixtures {
		t.Run(f.Name, func(t *testing.T) {
			res := canon.Run(f)
			for _, s := range res.Steps {
				if !s.Pass {
					t.Errorf("%s: transition %d (%s): want refusal %q, got %q: %s", f.Source, s.Index, s.Kind, s.ExpectError, s.GotError, s.Err)
				}
			}
			for _, it := range res.Items {
				if !it.Pass {
					when := "end"
					if !it.At.IsZero() {
						when = it.At.Format("2006-01-02T15:04:05Z07:00")
					}
					t.Errorf("%s: %s at %s: want %s, got %s: %q", f.Source, it.ID, when, it.Expected, it.Computed, it.Reasons)
				}
			}
			for _, c := range res.Contracts {
				if !c.Pass {
					t.Errorf("%s: contract of %s: %s", f.Source, c.ID, c.Diff)
				}
			}
			if !res.Pass {
				t.Errorf("%s: fixture failed", f.Source)
			}
		})
	}
}

// TestTransferChildReceivesOnlyDeclaredSubset checks the seed's transfer
// rule on the shipped fixture itself: the second agent's contract is the
// intersection of POL-2026-09 and the declared filter, nothing more.
func TestTransferChildReceivesOnlyDeclaredSubset(t *testing.T) {
	f := shippedFixture(t, "Transfer Replacement")
	s := &canon.State{}
	var filter *ledgerv1.HandoffFilter
	for _, st := range f.Steps {
		err := s.Apply(st.Transition, f.Authorities)
		if canon.Code(err) != st.ExpectError {
			t.Fatalf("%s %s: got %v, want %q", st.Kind, st.ItemID, err, st.ExpectError)
		}
		if err == nil && st.Kind == canon.DeriveHandoff {
			filter = st.Filter
		}
	}
	parent, _ := s.Item("POL-2026-09")
	child, ok := s.Item("POL-2026-09/agent-b")
	if !ok || filter == nil {
		t.Fatal("no derived child in the fixture")
	}
	if child.GetHandoffParentRef() != "POL-2026-09" || !child.GetHandoffFilterDeclared() {
		t.Errorf("child handoff fields: parent %q, declared %v", child.GetHandoffParentRef(), child.GetHandoffFilterDeclared())
	}
	want, err := canon.Intersect(parent.GetContract(), filter)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, child.GetContract(), protocmp.Transform()); d != "" {
		t.Errorf("child contract is not parent ∩ filter (-want +got):\n%s", d)
	}
	c := child.GetContract()
	got := map[string][]string{
		"fields":        c.GetEvidence().GetFields(),
		"tools":         toolNames(c.GetAction()),
		"destinations":  destinationNames(c.GetAction()),
		"visible_facts": c.GetReflexive().GetVisibleFacts(),
	}
	for _, s := range c.GetEvidence().GetSources() {
		got["sources"] = append(got["sources"], s.GetName())
	}
	wantSets := map[string][]string{
		"fields":        {"claim_id", "claim_amount"}, // salary was asked for; the parent does not grant it
		"sources":       {"claims_db"},
		"tools":         {"refund"}, // change_policy was asked for; the parent does not grant it
		"destinations":  {"claimant"},
		"visible_facts": {"uncertainty", "expiry"}, // credentials was asked for
	}
	if d := cmp.Diff(wantSets, got); d != "" {
		t.Errorf("child grants (-want +got):\n%s", d)
	}
	if got, want := c.GetAction().GetMaxAmount().GetMinorUnits(), int64(15000); got != want {
		t.Errorf("child max_amount %d, want %d", got, want)
	}
	if got := c.GetAction().GetMaxActions(); got != 1 {
		t.Errorf("child max_actions %d, want 1", got)
	}
}

func shippedFixture(t *testing.T, name string) canon.Fixture {
	t.Helper()
	fixtures, err := canon.ShippedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no shipped fixture %q", name)
	return canon.Fixture{}
}

const minimalFixture = `
name: minimal
authorities:
  SCOPE_ORGANISATION: [policy-owner]
transitions:
  - kind: propose
    at: "2026-09-01T09:00:00Z"
    actor: policy-owner
    item:
      canon_item_id: POL-1
      kind: ITEM_KIND_POLICY
      text: limit GBP 500
      source_origin: SOURCE_ORIGIN_POLICY
      authority_level: AUTHORITY_LEVEL_OWNER
      provenance_ref: repo:POL-1
      scope: SCOPE_ORGANISATION
      lifetime: LIFETIME_DURABLE
  - kind: promote
    at: "2026-09-01T10:00:00Z"
    actor: policy-owner
    item_id: POL-1
expect:
  POL-1: CANON_CLASS_CANONICAL
`

// TestParseFixtureIsStrict checks that a typo in a fixture is an error, not
// a silently different scenario.
func TestParseFixtureIsStrict(t *testing.T) {
	tests := []struct {
		name    string
		old     string // replaced in minimalFixture by new
		new     string
		wantErr bool
	}{
		{name: "minimal", wantErr: false},
		{name: "unknown top-level field", old: "expect:", new: "expected: {}\nexpect:", wantErr: true},
		{name: "unknown transition field", old: "    item_id: POL-1", new: "    item_id: POL-1\n    itemid: POL-1", wantErr: true},
		{name: "unknown item field", old: "      text: limit GBP 500", new: "      text: limit GBP 500\n      txt: x", wantErr: true},
		{name: "unknown enum name", old: "SOURCE_ORIGIN_POLICY", new: "SOURCE_ORIGIN_POLICE", wantErr: true},
		{name: "unknown transition kind", old: "kind: promote", new: "kind: approve", wantErr: true},
		{name: "unknown refusal code", old: "    item_id: POL-1", new: "    item_id: POL-1\n    expect_error: nope", wantErr: true},
		{name: "bad time", old: `"2026-09-01T10:00:00Z"`, new: `"yesterday"`, wantErr: true},
		{name: "unknown class", old: "CANON_CLASS_CANONICAL", new: "CANON_CLASS_CANON", wantErr: true},
		{name: "unspecified class", old: "CANON_CLASS_CANONICAL", new: "CANON_CLASS_UNSPECIFIED", wantErr: true},
		{name: "unknown scope in authorities", old: "SCOPE_ORGANISATION: [policy-owner]", new: "SCOPE_ORG: [policy-owner]", wantErr: true},
		{name: "duplicate key", old: "      text: limit GBP 500", new: "      text: limit GBP 500\n      text: limit GBP 900", wantErr: true},
		{name: "no name", old: "name: minimal", new: "", wantErr: true},
		{name: "no expect", old: "expect:\n  POL-1: CANON_CLASS_CANONICAL", new: "", wantErr: true},
		{name: "not yaml", old: "name: minimal", new: "name: [", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := minimalFixture
			if tc.old != "" {
				if !strings.Contains(src, tc.old) {
					t.Fatalf("fixture lacks %q", tc.old)
				}
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			_, err := canon.ParseFixture([]byte(src))
			if (err != nil) != tc.wantErr {
				t.Errorf("got error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// TestRunReportsEveryFailure checks that Run fails a fixture for each kind
// of wrong expectation, and reports the failing check rather than stopping.
func TestRunReportsEveryFailure(t *testing.T) {
	tests := []struct {
		name      string
		old, new  string
		wantPass  bool
		wantSteps []bool
		wantItems []bool
	}{
		{name: "passes", wantPass: true, wantSteps: []bool{true, true}, wantItems: []bool{true}},
		{name: "wrong class", old: "POL-1: CANON_CLASS_CANONICAL", new: "POL-1: CANON_CLASS_PROVISIONAL",
			wantSteps: []bool{true, true}, wantItems: []bool{false}},
		{name: "unexpected refusal", old: "    actor: policy-owner\n    item_id", new: "    actor: agent-7\n    item_id",
			wantSteps: []bool{true, false}, wantItems: []bool{false}},
		{name: "expected refusal that does not happen", old: "    item_id: POL-1", new: "    item_id: POL-1\n    expect_error: not_authorised",
			wantSteps: []bool{true, false}, wantItems: []bool{true}},
		{name: "an item without expectation", old: "POL-1: CANON_CLASS_CANONICAL", new: "POL-2: CANON_CLASS_UNKNOWN",
			wantSteps: []bool{true, true}, wantItems: []bool{true, false}},
		{name: "wrong checkpoint", old: "expect:", new: "checkpoints:\n  - at: \"2026-09-01T09:30:00Z\"\n    expect: {POL-1: CANON_CLASS_CANONICAL}\nexpect:",
			wantSteps: []bool{true, true}, wantItems: []bool{true, false}},
		{name: "wrong contract", old: "expect:", new: "expect_contracts:\n  POL-1: {contract_id: x}\nexpect:",
			wantSteps: []bool{true, true}, wantItems: []bool{true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := canon.ParseFixture([]byte(strings.Replace(minimalFixture, tc.old, tc.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			res := canon.Run(f)
			var steps, items []bool
			for _, s := range res.Steps {
				steps = append(steps, s.Pass)
			}
			for _, it := range res.Items {
				items = append(items, it.Pass)
			}
			if d := cmp.Diff(tc.wantSteps, steps); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantItems, items); d != "" {
				t.Errorf("items (-want +got):\n%s", d)
			}
			if res.Pass != tc.wantPass {
				t.Errorf("Pass = %v, want %v", res.Pass, tc.wantPass)
			}
		})
	}
}

func TestLoadFixtures(t *testing.T) {
	dir, err := canon.LoadFixtureDir("fixtures")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := canon.ShippedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	if len(dir) != len(shipped) {
		t.Errorf("directory has %d fixtures, embedded %d", len(dir), len(shipped))
	}
	tests := []struct {
		name string
		fsys fstest.MapFS
	}{
		{"empty directory", fstest.MapFS{}},
		{"invalid fixture", fstest.MapFS{"f/a.yaml": {Data: []byte("name: [")}}},
		{"duplicate names", fstest.MapFS{"f/a.yaml": {Data: []byte(minimalFixture)}, "f/b.yaml": {Data: []byte(minimalFixture)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := canon.LoadFixtures(tc.fsys, "f"); err == nil {
				t.Error("loaded, want an error")
			}
		})
	}
}

// FuzzFixture decodes arbitrary fixture files, seeded with the shipped
// ones. Decoding and running must never panic, Run must be deterministic,
// and whatever the ledger accepts, nothing it classifies CANONICAL may lack
// an authorised approval, provenance or verified authority.
func FuzzFixture(f *testing.F) {
	entries, err := os.ReadDir("fixtures")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("fixtures", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(minimalFixture))
	f.Fuzz(func(t *testing.T, data []byte) {
		fx, err := canon.ParseFixture(data)
		if err != nil {
			return
		}
		first, second := canon.Run(fx), canon.Run(fx)
		if d := cmp.Diff(first, second); d != "" {
			t.Fatalf("Run is not deterministic:\n%s", d)
		}
		s := &canon.State{}
		for _, st := range fx.Steps {
			_ = s.Apply(st.Transition, fx.Authorities)
		}
		checkCanonInvariants(t, s, fx.Authorities)
	})
}
