package canon_test

import (
	"testing"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/ambitkernel/ambit/kernel/canon"
)

// checkCanonInvariants fails t if anything s classifies CANONICAL lacks what
// canon requires, whatever sequence of transitions produced s.
func checkCanonInvariants(t *testing.T, s *canon.State, auth canon.Authorities) {
	t.Helper()
	for _, c := range canon.ClassifyAll(s, auth) {
		if c.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
			continue
		}
		it := c.Item
		id := it.GetCanonItemId()
		switch {
		case it.GetPromotionState() != ledgerv1.PromotionState_PROMOTION_STATE_APPROVED:
			t.Fatalf("%s is CANONICAL but %s", id, it.GetPromotionState())
		case !auth.Allows(it.GetScope(), it.GetPromotionAuthority()):
			t.Fatalf("%s is CANONICAL, approved by unauthorised %q", id, it.GetPromotionAuthority())
		case it.GetProvenanceRef() == "":
			t.Fatalf("%s is CANONICAL without provenance", id)
		case it.GetAuthorityLevel() != ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER && it.GetAuthorityLevel() != ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED:
			t.Fatalf("%s is CANONICAL with %s", id, it.GetAuthorityLevel())
		case it.GetScope() == ledgerv1.Scope_SCOPE_SESSION || it.GetLifetime() == ledgerv1.Lifetime_LIFETIME_SESSION:
			t.Fatalf("%s is CANONICAL but session-bound", id)
		case it.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED:
			t.Fatalf("%s is CANONICAL with an unresolved conflict", id)
		case it.GetHandoffParentRef() != "" && !it.GetHandoffFilterDeclared():
			t.Fatalf("%s is CANONICAL but an unfiltered handoff", id)
		case it.GetHandoffParentRef() != "" && canon.Classify(s, it.GetHandoffParentRef(), auth).Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL:
			t.Fatalf("%s is CANONICAL but its handoff parent is not", id)
		}
		if _, superseded := s.SupersededBy(id); superseded {
			t.Fatalf("%s is CANONICAL but superseded", id)
		}
	}
}

// ledgerOps decodes bytes into transitions over small pools of ids, actors
// and values, weighted towards well-formed proposals by authorised actors,
// so that random input reaches deep into the ledger's rules (canon,
// conflicts, supersession, handoffs) instead of stopping at a refusal.
func ledgerOps(data []byte) []canon.Transition {
	ids := []string{"A", "B", "C", "D"}
	actors := []string{owner, owner, orchestrator, sessionOwner, agent, "tool-adapter"}
	texts := []string{"limit GBP 500", "limit GBP 800", "no approver"}
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	pick := func(pool []string) string { return pool[next()%len(pool)] }
	// kinds weights the transition kinds; 0 (unset) stays possible.
	kinds := []canon.TransitionKind{
		canon.Propose, canon.Propose, canon.Propose, canon.Propose, canon.Propose, canon.Propose,
		canon.Promote, canon.Promote, canon.Promote, canon.Promote,
		canon.DeriveHandoff, canon.DeriveHandoff, canon.Supersede, canon.Supersede,
		canon.ResolveConflict, canon.ResolveConflict, canon.Reject, 0,
	}
	var out []canon.Transition
	for minute := 0; len(data) > 0; minute += next() % 2 {
		t := canon.Transition{Kind: kinds[next()%len(kinds)], At: at(minute), Actor: pick(actors)}
		if t.Kind != canon.Propose {
			t.ItemID = pick(ids)
		}
		if t.Kind == canon.Supersede || next()%16 == 0 {
			t.OtherID = pick(ids) // sometimes where it does not belong
		}
		if t.Kind != canon.Propose && t.Kind != canon.DeriveHandoff {
			out = append(out, t)
			continue
		}
		it := &ledgerv1.CanonItem{
			CanonItemId:    pick(ids),
			Kind:           []ledgerv1.ItemKind{1, 1, 2, 2, 3, 4, 5, 0}[next()%8],
			Text:           pick(texts),
			SourceOrigin:   ledgerv1.SourceOrigin(next()%7 + 1),
			AuthorityLevel: []ledgerv1.AuthorityLevel{3, 3, 2, 1, 0}[next()%5],
			Scope:          []ledgerv1.Scope{5, 5, 3, 3, 1, 2, 4, 0}[next()%8],
			Lifetime:       []ledgerv1.Lifetime{3, 3, 2, 1, 0}[next()%5],
		}
		if next()%6 != 0 {
			it.ProvenanceRef = "ref:" + it.CanonItemId
		}
		switch next() % 8 {
		case 0, 1:
			it.ConflictState = ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED
			it.ConflictsWith = pick(ids)
		case 2:
			// A forged or inconsistent decision, refused.
			it.PromotionState = ledgerv1.PromotionState(next() % 4)
			it.ConflictState = ledgerv1.ConflictState(next() % 4)
		}
		if next()%4 == 0 {
			it.SupersedesRef = pick(ids)
		}
		if it.Kind == ledgerv1.ItemKind_ITEM_KIND_CONTRACT {
			it.Text = ""
			it.Contract = refundContract()
		}
		if t.Kind == canon.DeriveHandoff {
			it.Kind, it.Text, it.Contract = 0, "", nil
			if next()%3 != 0 {
				t.Filter = &ledgerv1.HandoffFilter{Fields: []string{"claim_id"}, Tools: []string{"refund"}, MaxActions: int32(next() % 4)}
			}
		}
		t.Item = it
		out = append(out, t)
	}
	return out
}

// addLedgerSeeds seeds a fuzz target of ledgerOps input: nothing, two
// transition sequences and text.
func addLedgerSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 2, 2, 1, 3, 5, 3, 0, 0, 0, 1, 2, 1, 1, 0, 0})
	f.Add([]byte("a ledger of transitions decoded from bytes, seeded with text"))
	f.Add([]byte{1, 0, 0, 0, 1, 1, 0, 1, 3, 5, 3, 1, 1, 1, 1, 1, 1, 2, 0, 0, 0, 0, 6, 1, 1, 0, 0, 0, 2, 2, 4, 3, 0, 0, 1, 1, 1})
}

// FuzzLedger applies arbitrary transition sequences. Nothing may panic, a
// refused transition must carry a refusal code, classification must be
// deterministic, replaying the accepted log must rebuild the same classes,
// and nothing CANONICAL may lack what canon requires.
func FuzzLedger(f *testing.F) {
	addLedgerSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		auth := defaultAuth()
		s := &canon.State{}
		for _, tr := range ledgerOps(data) {
			if err := s.Apply(tr, auth); err != nil && canon.Code(err) == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
		}
		first := canon.ClassifyAll(s, auth)
		if d := cmp.Diff(first, canon.ClassifyAll(s, auth), protocmp.Transform()); d != "" {
			t.Fatalf("ClassifyAll is not deterministic:\n%s", d)
		}
		r, err := canon.Replay(s.Transitions(), at(1<<20), auth)
		if err != nil {
			t.Fatalf("replay of the accepted log: %v", err)
		}
		if d := cmp.Diff(first, canon.ClassifyAll(r, auth), protocmp.Transform()); d != "" {
			t.Fatalf("replay differs:\n%s", d)
		}
		checkCanonInvariants(t, s, auth)
	})
}
