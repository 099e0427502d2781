package canon_test

import (
	"errors"
	"slices"
	"testing"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"pgregory.net/rapid"

	"github.com/ambitkernel/ambit/kernel/canon"
)

func TestIntersect(t *testing.T) {
	// want edits a copy of the parent into the expected child.
	tests := []struct {
		name    string
		parent  *contractv1.Contract
		filter  *ledgerv1.HandoffFilter
		want    func(c *contractv1.Contract)
		wantErr error
	}{
		{
			name:   "nil filter forwards a copy of everything (the ledger records HOLD)",
			parent: refundContract(),
			want:   func(c *contractv1.Contract) {},
		},
		{
			name:   "empty filter forwards no names and keeps the limits",
			parent: refundContract(),
			filter: &ledgerv1.HandoffFilter{},
			want: func(c *contractv1.Contract) {
				c.Evidence.Fields, c.Evidence.Sources = nil, nil
				c.Action.Tools = nil
				c.Reflexive.VisibleFacts, c.Reflexive.MutableFacts = nil, nil
			},
		},
		{
			name:   "declared subset, with names the parent lacks dropped",
			parent: refundContract(),
			filter: &ledgerv1.HandoffFilter{
				Fields:       []string{"claim_amount", "salary", "claim_id"},
				Sources:      []string{"receipt_store", "hr_db"},
				Tools:        []string{"refund", "change_policy"},
				Destinations: []string{"claimant", "other_customer"},
				VisibleFacts: []string{"expiry", "credentials"},
				MaxAmount:    gbp(10000),
				MaxActions:   1,
			},
			want: func(c *contractv1.Contract) {
				c.Evidence.Fields = []string{"claim_id", "claim_amount"} // parent order
				c.Evidence.Sources = c.Evidence.Sources[1:]
				c.Action.Tools = tools([]string{"refund"}, []string{"claimant"})
				c.Action.MaxAmount = gbp(10000)
				c.Action.ApprovalOver = gbp(10000) // lowered with the limit
				c.Action.MaxActions = 1
				c.Reflexive.VisibleFacts = []string{"expiry"}
				c.Reflexive.MutableFacts = nil
			},
		},
		{
			name:   "a filter cannot raise limits",
			parent: refundContract(),
			filter: &ledgerv1.HandoffFilter{Tools: []string{"refund"}, Destinations: []string{"claimant"}, MaxAmount: gbp(9_000_000), MaxActions: 50},
			want: func(c *contractv1.Contract) {
				c.Evidence.Fields, c.Evidence.Sources = nil, nil
				c.Action.Tools = tools([]string{"refund"}, []string{"claimant"})
				c.Reflexive.VisibleFacts, c.Reflexive.MutableFacts = nil, nil
			},
		},
		{
			name:    "a limit in another currency is refused",
			parent:  refundContract(),
			filter:  &ledgerv1.HandoffFilter{MaxAmount: &contractv1.Money{CurrencyCode: "EUR", MinorUnits: 100}},
			wantErr: canon.ErrInvalidFilter,
		},
		{
			name:    "a negative limit is refused",
			parent:  refundContract(),
			filter:  &ledgerv1.HandoffFilter{MaxAmount: gbp(-1)},
			wantErr: canon.ErrInvalidFilter,
		},
		{
			name:    "a negative action count is refused",
			parent:  refundContract(),
			filter:  &ledgerv1.HandoffFilter{MaxActions: -1},
			wantErr: canon.ErrInvalidFilter,
		},
		{
			name:    "no parent",
			filter:  &ledgerv1.HandoffFilter{},
			wantErr: canon.ErrInvalidItem,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.parent)
			got, err := canon.Intersect(tc.parent, tc.filter)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if !proto.Equal(before, tc.parent) {
				t.Errorf("Intersect modified its parent")
			}
			if err != nil {
				return
			}
			want := proto.CloneOf(tc.parent)
			tc.want(want)
			if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
				t.Errorf("child (-want +got):\n%s", d)
			}
			if got == tc.parent || got.GetAction() == tc.parent.GetAction() {
				t.Errorf("child shares memory with its parent")
			}
		})
	}
}

var (
	fieldPool  = []string{"claim_id", "claim_amount", "claimant_id", "bank_details", "salary", "medical_notes"}
	sourcePool = []string{"claims_db", "receipt_store", "hr_db", "web"}
	actionPool = []string{"refund", "email_attachment", "change_policy"}
	destPool   = []string{"claimant", "finance_team", "other_customer"}
	factPool   = []string{"capabilities", "uncertainty", "commitments", "expiry", "policy_thresholds", "credentials"}
)

func names(pool []string) *rapid.Generator[[]string] {
	return rapid.SliceOfN(rapid.SampledFrom(pool), 0, len(pool)+2)
}

func money(currencies ...string) *rapid.Generator[*contractv1.Money] {
	return rapid.Custom(func(t *rapid.T) *contractv1.Money {
		return &contractv1.Money{
			CurrencyCode: rapid.SampledFrom(currencies).Draw(t, "currency"),
			MinorUnits:   rapid.Int64Range(0, 1_000_000).Draw(t, "minor"),
		}
	})
}

func genParent(t *rapid.T) *contractv1.Contract {
	c := refundContract()
	if rapid.Bool().Draw(t, "evidence") {
		var sources []*contractv1.SourceGrant
		for _, n := range names(sourcePool).Draw(t, "sources") {
			sources = append(sources, &contractv1.SourceGrant{Name: n, Provenance: contractv1.Provenance(rapid.IntRange(1, 3).Draw(t, "prov"))})
		}
		c.Evidence = &contractv1.EvidenceAperture{Fields: names(fieldPool).Draw(t, "fields"), Sources: sources, MaxAgeSeconds: 60}
	} else {
		c.Evidence = nil
	}
	if rapid.Bool().Draw(t, "action") {
		a := &contractv1.ActionAperture{MaxActions: int32(rapid.IntRange(0, 10).Draw(t, "max_actions"))}
		for _, n := range names(actionPool).Draw(t, "actions") {
			if slices.Contains(toolNames(a), n) {
				continue // a contract names each tool once
			}
			a.Tools = append(a.Tools, tools([]string{n}, names(destPool).Draw(t, "dests_"+n))...)
		}
		if rapid.Bool().Draw(t, "has_max") {
			a.MaxAmount = money("GBP").Draw(t, "max")
			a.ApprovalOver = &contractv1.Money{CurrencyCode: "GBP", MinorUnits: rapid.Int64Range(0, a.MaxAmount.MinorUnits).Draw(t, "approval")}
		}
		c.Action = a
	} else {
		c.Action = nil
	}
	if rapid.Bool().Draw(t, "reflexive") {
		c.Reflexive = &contractv1.ReflexiveAperture{VisibleFacts: names(factPool).Draw(t, "visible"), MutableFacts: names(factPool).Draw(t, "mutable")}
	} else {
		c.Reflexive = nil
	}
	return c
}

func genFilter(t *rapid.T) *ledgerv1.HandoffFilter {
	f := &ledgerv1.HandoffFilter{
		Fields:       names(fieldPool).Draw(t, "f_fields"),
		Sources:      names(sourcePool).Draw(t, "f_sources"),
		Tools:        names(actionPool).Draw(t, "f_actions"),
		Destinations: names(destPool).Draw(t, "f_dests"),
		VisibleFacts: names(factPool).Draw(t, "f_visible"),
		MaxActions:   int32(rapid.IntRange(-1, 12).Draw(t, "f_max_actions")),
	}
	if rapid.Bool().Draw(t, "f_has_max") {
		f.MaxAmount = money("GBP", "GBP", "GBP", "EUR").Draw(t, "f_max")
	}
	return f
}

// subset reports whether every element of child is in parent and in
// allowed, and child has no duplicates.
func subset(child, parent, allowed []string) bool {
	for i, n := range child {
		if !slices.Contains(parent, n) || !slices.Contains(allowed, n) || slices.Contains(child[:i], n) {
			return false
		}
	}
	// Exact intersection: nothing both grant is dropped.
	for _, n := range parent {
		if slices.Contains(allowed, n) && !slices.Contains(child, n) {
			return false
		}
	}
	return true
}

// TestIntersectOnlyShrinks is the handoff property: for any parent and
// filter, every set of the child is the intersection of the parent's and the
// filter's, limits never grow, the parent is untouched, and filtering twice
// changes nothing.
func TestIntersectOnlyShrinks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parent := genParent(t)
		f := genFilter(t)
		before := proto.CloneOf(parent)
		child, err := canon.Intersect(parent, f)
		if !proto.Equal(before, parent) {
			t.Fatalf("parent modified")
		}
		pa := parent.GetAction()
		invalid := f.GetMaxActions() < 0 ||
			(f.GetMaxAmount() != nil && pa.GetMaxAmount() != nil && f.GetMaxAmount().GetCurrencyCode() != pa.GetMaxAmount().GetCurrencyCode())
		if invalid != (err != nil) {
			t.Fatalf("invalid filter %v, error %v", invalid, err)
		}
		if err != nil {
			if !errors.Is(err, canon.ErrInvalidFilter) {
				t.Fatalf("error %v is not ErrInvalidFilter", err)
			}
			return
		}

		e, pe := child.GetEvidence(), parent.GetEvidence()
		if !subset(e.GetFields(), pe.GetFields(), f.GetFields()) {
			t.Fatalf("fields %v not the intersection of %v and %v", e.GetFields(), pe.GetFields(), f.GetFields())
		}
		var childSources, parentSources []string
		for _, s := range e.GetSources() {
			childSources = append(childSources, s.GetName())
			if !slices.ContainsFunc(pe.GetSources(), func(p *contractv1.SourceGrant) bool { return proto.Equal(p, s) }) {
				t.Fatalf("source grant %v is not the parent's", s)
			}
		}
		for _, s := range pe.GetSources() {
			parentSources = append(parentSources, s.GetName())
		}
		if !subset(childSources, parentSources, f.GetSources()) {
			t.Fatalf("sources %v not the intersection of %v and %v", childSources, parentSources, f.GetSources())
		}
		a := child.GetAction()
		// A kept tool is one both grant with a destination class left.
		var wantTools []string
		for _, p := range pa.GetTools() {
			if slices.Contains(f.GetTools(), p.GetName()) && !slices.Contains(wantTools, p.GetName()) && slices.ContainsFunc(p.GetDestinations(), func(d *contractv1.DestinationClass) bool {
				return slices.Contains(f.GetDestinations(), d.GetName())
			}) {
				wantTools = append(wantTools, p.GetName())
			}
		}
		if !slices.Equal(toolNames(a), wantTools) {
			t.Fatalf("tools %v, want %v", toolNames(a), wantTools)
		}
		for _, tool := range a.GetTools() {
			var parentDests []string
			for _, p := range pa.GetTools() {
				if p.GetName() == tool.GetName() {
					parentDests = destinationNames(&contractv1.ActionAperture{Tools: []*contractv1.ToolGrant{p}})
					break // the first grant of a name is the one kept
				}
			}
			got := destinationNames(&contractv1.ActionAperture{Tools: []*contractv1.ToolGrant{tool}})
			if len(got) == 0 || !subset(got, parentDests, f.GetDestinations()) {
				t.Fatalf("tool %s destinations %v from %v", tool.GetName(), got, parentDests)
			}
		}
		r, pr := child.GetReflexive(), parent.GetReflexive()
		if !subset(r.GetVisibleFacts(), pr.GetVisibleFacts(), f.GetVisibleFacts()) {
			t.Fatalf("visible facts %v", r.GetVisibleFacts())
		}
		if len(r.GetMutableFacts()) != 0 {
			t.Fatalf("mutable facts %v forwarded", r.GetMutableFacts())
		}

		switch {
		case (a.GetMaxAmount() == nil) != (pa.GetMaxAmount() == nil):
			t.Fatalf("max_amount %v from parent %v", a.GetMaxAmount(), pa.GetMaxAmount())
		case a.GetMaxAmount() != nil && a.GetMaxAmount().GetMinorUnits() > pa.GetMaxAmount().GetMinorUnits():
			t.Fatalf("max_amount grew from %v to %v", pa.GetMaxAmount(), a.GetMaxAmount())
		case a.GetMaxAmount() != nil && f.GetMaxAmount() != nil && a.GetMaxAmount().GetMinorUnits() > f.GetMaxAmount().GetMinorUnits():
			t.Fatalf("max_amount %v above the filter's %v", a.GetMaxAmount(), f.GetMaxAmount())
		case a.GetApprovalOver().GetMinorUnits() > pa.GetApprovalOver().GetMinorUnits():
			t.Fatalf("approval_over grew from %v to %v", pa.GetApprovalOver(), a.GetApprovalOver())
		case a.GetMaxAmount() != nil && a.GetApprovalOver().GetMinorUnits() > a.GetMaxAmount().GetMinorUnits():
			t.Fatalf("approval_over %v above max_amount %v", a.GetApprovalOver(), a.GetMaxAmount())
		case a.GetMaxActions() > pa.GetMaxActions():
			t.Fatalf("max_actions grew from %d to %d", pa.GetMaxActions(), a.GetMaxActions())
		case f.GetMaxActions() > 0 && a.GetMaxActions() > f.GetMaxActions():
			t.Fatalf("max_actions %d above the filter's %d", a.GetMaxActions(), f.GetMaxActions())
		}

		// Everything the filter does not govern is copied.
		strip := func(c *contractv1.Contract) *contractv1.Contract {
			c = proto.CloneOf(c)
			if c.Evidence != nil {
				c.Evidence.Fields, c.Evidence.Sources = nil, nil
			}
			if c.Action != nil {
				c.Action.Tools = nil
				c.Action.MaxAmount, c.Action.ApprovalOver, c.Action.MaxActions = nil, nil, 0
			}
			if c.Reflexive != nil {
				c.Reflexive.VisibleFacts, c.Reflexive.MutableFacts = nil, nil
			}
			return c
		}
		if !proto.Equal(strip(parent), strip(child)) {
			t.Fatalf("ungoverned parts changed:\n%v\n%v", strip(parent), strip(child))
		}

		again, err := canon.Intersect(child, f)
		if err != nil || !proto.Equal(again, child) {
			t.Fatalf("filtering twice changed the child (err %v)", err)
		}
	})
}
