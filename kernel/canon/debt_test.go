package canon_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/reach"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
)

// coupled is the shipped coupled profile, edited.
func coupled(t *testing.T, edits ...func(*contractv1.Contract)) *contractv1.Contract {
	t.Helper()
	c, err := contract.Profile("coupled")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(c)
	}
	return c
}

// widened adds a raw field and doubles the hard limit.
func widened(c *contractv1.Contract) {
	c.Version = "2"
	c.Evidence.Fields = append(c.Evidence.Fields, "salary")
	c.Action.MaxAmount.MinorUnits *= 2
}

// debtRecord is the accurate record of widening older into newer.
func debtRecord(t *testing.T, id string, older, newer *ledgerv1.CanonItem, mods ...func(*ledgerv1.DebtRecord)) *ledgerv1.CanonItem {
	t.Helper()
	o, err := reach.Of(older.GetContract())
	if err != nil {
		t.Fatal(err)
	}
	n, err := reach.Of(newer.GetContract())
	if err != nil {
		t.Fatal(err)
	}
	d := reach.Compare(o, n)
	rec := &ledgerv1.DebtRecord{
		OldContractRef: older.GetCanonItemId(), NewContractRef: newer.GetCanonItemId(),
		AddedRoutes: d.DebtRoutes(), RelaxedLimits: d.RelaxedLimits(),
		Decision: ledgerv1.AssuranceDecision_ASSURANCE_DECISION_ACCEPTED,
	}
	for _, f := range d.RerunFamilies() {
		rec.Reruns = append(rec.Reruns, &ledgerv1.FamilyRerun{FailureFamily: string(f), EpisodesRef: "suite:seed", Episodes: 10})
	}
	for _, m := range mods {
		m(rec)
	}
	return policy(id, "", func(it *ledgerv1.CanonItem) {
		it.Kind = ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD
		it.SourceOrigin = ledgerv1.SourceOrigin_SOURCE_ORIGIN_GOVERNANCE
		it.ProvenanceRef = "item:" + newer.GetCanonItemId()
		it.Debt = rec
	})
}

// TestDebtRecordProposals: a debt record is recorded only when it accounts
// for its widening exactly; each refusal names what is wrong.
func TestDebtRecordProposals(t *testing.T) {
	v1 := contractItem("CTR-1", coupled(t))
	v2 := contractItem("CTR-2", coupled(t, widened), withSupersedes("CTR-1"))
	same := contractItem("CTR-same", coupled(t, func(c *contractv1.Contract) { c.Version = "same" }))
	good := debtRecord(t, "DEBT-2", v1, v2)
	tests := []struct {
		name     string
		item     *ledgerv1.CanonItem
		wantCode string
		wantMsg  string
	}{
		{"accurate", good, "", ""},
		{"unknown old contract", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.OldContractRef = "CTR-0" }), "unknown_item", "old_contract_ref"},
		{"old is not a contract", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.OldContractRef = "POL-1" }), "invalid_item", "not a contract"},
		{"one contract twice", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.NewContractRef = "CTR-1" }), "invalid_item", "both"},
		{"no decision", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.Decision = 0 }), "invalid_item", "no assurance decision"},
		{"undefined decision", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.Decision = 7 }), "invalid_item", "no assurance decision"},
		{"a route hidden", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.AddedRoutes = r.AddedRoutes[1:] }), "invalid_item", "missing"},
		{"a route invented", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) {
			r.AddedRoutes = append(r.AddedRoutes, &ledgerv1.DebtRoute{Route: "R read credentials", FailureFamilies: []string{"self-query"}})
		}), "invalid_item", "not added R read credentials"},
		{"a family hidden", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.AddedRoutes[0].FailureFamilies = nil }), "invalid_item", "added_routes"},
		{"a limit hidden", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.RelaxedLimits = nil }), "invalid_item", "action.max_amount"},
		{"a family not re-run", debtRecord(t, "D", v1, v2, func(r *ledgerv1.DebtRecord) { r.Reruns = r.Reruns[1:] }), "invalid_item", "no re-run"},
		{"nothing widened", debtRecord(t, "D", v1, same, func(r *ledgerv1.DebtRecord) {
			r.OldContractRef, r.NewContractRef = "CTR-2", "CTR-1"
		}), "invalid_item", "does not widen"},
		{"text on a debt record", func() *ledgerv1.CanonItem { it := proto.CloneOf(good); it.Text = "x"; return it }(), "invalid_item", "carries text"},
		{"no debt on a debt record", func() *ledgerv1.CanonItem { it := proto.CloneOf(good); it.Debt = nil; return it }(), "invalid_item", "no debt record"},
		{"debt on a policy", policy("POL-2", "text", func(it *ledgerv1.CanonItem) { it.Debt = good.GetDebt() }), "invalid_item", "carries a debt record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &canon.State{}
			auth := defaultAuth()
			for i, tr := range []canon.Transition{propose(0, owner, policy("POL-1", "text")), propose(1, owner, v1), promote(2, owner, "CTR-1"),
				propose(3, owner, v2), propose(4, owner, same)} {
				if err := s.Apply(tr, auth); err != nil {
					t.Fatalf("setup %d: %v", i, err)
				}
			}
			err := s.Apply(propose(5, owner, tt.item), auth)
			if got := canon.Code(err); got != tt.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.wantCode)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
			if err != nil && len(s.IDs()) != 4 {
				t.Errorf("a refused record changed the ledger: %v", s.IDs())
			}
		})
	}
}

// TestDebtRule: promotion of a widening waits for a CANONICAL accepting
// record; a narrowing, a handoff child and a first contract need none.
func TestDebtRule(t *testing.T) {
	v1 := contractItem("CTR-1", coupled(t))
	v2 := contractItem("CTR-2", coupled(t, widened), withSupersedes("CTR-1"))
	auth := defaultAuth()
	s := &canon.State{}
	steps := []struct {
		tr   canon.Transition
		want error
	}{
		{propose(0, owner, v1), nil},
		{promote(1, owner, "CTR-1"), nil}, // nothing to widen
		{propose(2, owner, v2), nil},
		{promote(3, owner, "CTR-2"), canon.ErrContractionDebtUnpaid},
		{propose(4, owner, debtRecord(t, "DEBT-2", v1, v2)), nil},
		{promote(5, owner, "CTR-2"), canon.ErrContractionDebtUnpaid}, // proposed is not canon
		{promote(6, agent, "DEBT-2"), canon.ErrNotAuthorised},
		{promote(7, owner, "DEBT-2"), nil},
		{promote(8, owner, "CTR-2"), nil},
		{promote(9, owner, "CTR-2"), nil}, // idempotent
		// A handoff child of the widening is narrower by derivation.
		{derive(10, orchestrator, "CTR-2", childTemplate("CTR-2/child"), &ledgerv1.HandoffFilter{Fields: []string{"claim_id"}, Sources: []string{"claims_db"},
			Tools: []string{"refund"}, Destinations: []string{"claimant"}}), nil},
		{promote(11, orchestrator, "CTR-2/child"), nil},
	}
	for i, st := range steps {
		err := s.Apply(st.tr, auth)
		if !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("step %d (%s %s): err = %v, want %v", i, st.tr.Kind, st.tr.ItemID, err, st.want)
		}
	}
	for id, want := range map[string]ledgerv1.CanonClass{"CTR-1": canonical, "CTR-2": canonical, "DEBT-2": canonical, "CTR-2/child": canonical} {
		if got := canon.Classify(s, id, auth).Class; got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	// The log replays to the same ledger, debt rule included, and to the
	// ledger as it stood before the record was promoted.
	replayed, err := canon.Replay(s.Transitions(), at(100), auth)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if got := canon.Classify(replayed, "CTR-2", auth).Class; got != canonical {
		t.Errorf("replayed CTR-2 is %s", got)
	}
	past, err := canon.Replay(s.Transitions(), at(6), auth)
	if err != nil {
		t.Fatalf("replay to minute 6: %v", err)
	}
	if got := canon.Classify(past, "CTR-2", auth).Class; got != provisional {
		t.Errorf("CTR-2 at minute 6 is %s, want PROVISIONAL", got)
	}
	// The content hash covers the record: changed routes are new content.
	rec, _ := s.Item("DEBT-2")
	other := proto.CloneOf(rec)
	other.Debt.Rationale = "changed"
	h1, _ := canon.ContentHash(rec)
	h2, _ := canon.ContentHash(other)
	if h1 == h2 || h1 == "" {
		t.Errorf("debt record hashes %q and %q", h1, h2)
	}
}
