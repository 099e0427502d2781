package canon_test

import (
	"slices"
	"time"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/kernel/canon"
)

const (
	owner        = "policy-owner"
	orchestrator = "orchestrator"
	sessionOwner = "session-owner"
	agent        = "agent-7"
)

const (
	canonical   = ledgerv1.CanonClass_CANON_CLASS_CANONICAL
	provisional = ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL
	sessionLoc  = ledgerv1.CanonClass_CANON_CLASS_SESSION_LOCAL
	external    = ledgerv1.CanonClass_CANON_CLASS_EXTERNAL_UNTRUSTED
	deprecated  = ledgerv1.CanonClass_CANON_CLASS_DEPRECATED
	unknown     = ledgerv1.CanonClass_CANON_CLASS_UNKNOWN
	inconcl     = ledgerv1.CanonClass_CANON_CLASS_INCONCLUSIVE
	hold        = ledgerv1.CanonClass_CANON_CLASS_HOLD
)

var t0 = time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)

// at returns a time min minutes after t0.
func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func defaultAuth() canon.Authorities {
	return canon.Authorities{
		ledgerv1.Scope_SCOPE_ORGANISATION: {owner},
		ledgerv1.Scope_SCOPE_TASK:         {orchestrator},
		ledgerv1.Scope_SCOPE_SESSION:      {sessionOwner},
	}
}

// policy returns an owner's organisation policy with provenance; mods
// adjust it for a case.
func policy(id, text string, mods ...func(*ledgerv1.CanonItem)) *ledgerv1.CanonItem {
	it := &ledgerv1.CanonItem{
		CanonItemId:    id,
		Kind:           ledgerv1.ItemKind_ITEM_KIND_POLICY,
		Text:           text,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef:  "policy-repo:" + id,
		Scope:          ledgerv1.Scope_SCOPE_ORGANISATION,
		Lifetime:       ledgerv1.Lifetime_LIFETIME_DURABLE,
	}
	for _, m := range mods {
		m(it)
	}
	return it
}

func toolOutput(id, text string, mods ...func(*ledgerv1.CanonItem)) *ledgerv1.CanonItem {
	return policy(id, text, append([]func(*ledgerv1.CanonItem){func(it *ledgerv1.CanonItem) {
		it.Kind = ledgerv1.ItemKind_ITEM_KIND_TOOL_OUTPUT
		it.SourceOrigin = ledgerv1.SourceOrigin_SOURCE_ORIGIN_TOOL
		it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE
		it.ProvenanceRef = "tool:" + id
	}}, mods...)...)
}

func contractItem(id string, c *contractv1.Contract, mods ...func(*ledgerv1.CanonItem)) *ledgerv1.CanonItem {
	return policy(id, "", append([]func(*ledgerv1.CanonItem){func(it *ledgerv1.CanonItem) {
		it.Kind = ledgerv1.ItemKind_ITEM_KIND_CONTRACT
		it.Contract = c
	}}, mods...)...)
}

func childTemplate(id string) *ledgerv1.CanonItem {
	return &ledgerv1.CanonItem{
		CanonItemId:    id,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_GOVERNANCE,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED,
		ProvenanceRef:  "handoff:" + id,
		Scope:          ledgerv1.Scope_SCOPE_TASK,
		Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
	}
}

func gbp(minor int64) *contractv1.Money {
	return &contractv1.Money{CurrencyCode: "GBP", MinorUnits: minor}
}

func refundContract() *contractv1.Contract {
	return &contractv1.Contract{
		ContractId: "refund-claims",
		Version:    "2026-09",
		Binding: &contractv1.Binding{
			TaskId: "refund-claim-1001", Subject: "employee-7", Purpose: "expense-refund",
			StateVersion: "claims-v42", ValidUntil: timestamppb.New(time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)),
		},
		Evidence: &contractv1.EvidenceAperture{
			Fields: []string{"claim_id", "claim_amount", "bank_details"},
			Sources: []*contractv1.SourceGrant{
				{Name: "claims_db", Provenance: contractv1.Provenance_PROVENANCE_TRUSTED},
				{Name: "receipt_store", Provenance: contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING},
			},
			MaxAgeSeconds: 3600,
		},
		Action: &contractv1.ActionAperture{
			Tools:        tools([]string{"refund", "email_attachment"}, []string{"claimant", "finance_team"}),
			MaxAmount:    gbp(50000),
			ApprovalOver: gbp(20000),
			MaxActions:   3,
		},
		Reflexive: &contractv1.ReflexiveAperture{
			VisibleFacts: []string{"uncertainty", "expiry", "commitments"},
			MutableFacts: []string{"commitments"},
		},
		Coupling: &contractv1.Coupling{RequireTrustedCorroboration: true, ForbidSelfMutation: true},
	}
}

func propose(min int, actor string, it *ledgerv1.CanonItem) canon.Transition {
	return canon.Transition{Kind: canon.Propose, At: at(min), Actor: actor, Item: it}
}

func promote(min int, actor, id string) canon.Transition {
	return canon.Transition{Kind: canon.Promote, At: at(min), Actor: actor, ItemID: id}
}

func reject(min int, actor, id string) canon.Transition {
	return canon.Transition{Kind: canon.Reject, At: at(min), Actor: actor, ItemID: id}
}

func supersede(min int, actor, old, nu string) canon.Transition {
	return canon.Transition{Kind: canon.Supersede, At: at(min), Actor: actor, ItemID: old, OtherID: nu}
}

func resolve(min int, actor, id string) canon.Transition {
	return canon.Transition{Kind: canon.ResolveConflict, At: at(min), Actor: actor, ItemID: id}
}

func derive(min int, actor, parent string, child *ledgerv1.CanonItem, f *ledgerv1.HandoffFilter) canon.Transition {
	return canon.Transition{Kind: canon.DeriveHandoff, At: at(min), Actor: actor, ItemID: parent, Item: child, Filter: f}
}

func withConflict(with string) func(*ledgerv1.CanonItem) {
	return func(it *ledgerv1.CanonItem) {
		it.ConflictState = ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED
		it.ConflictsWith = with
	}
}

func withSupersedes(old string) func(*ledgerv1.CanonItem) {
	return func(it *ledgerv1.CanonItem) { it.SupersedesRef = old }
}

// tools grants each named tool with every named destination class.
func tools(names, dests []string) []*contractv1.ToolGrant {
	var out []*contractv1.ToolGrant
	for _, n := range names {
		t := &contractv1.ToolGrant{Name: n}
		for _, d := range dests {
			t.Destinations = append(t.Destinations, &contractv1.DestinationClass{Name: d, When: "true"})
		}
		out = append(out, t)
	}
	return out
}

// toolNames and destinationNames list what a contract's tools grant.
func toolNames(a *contractv1.ActionAperture) []string {
	var out []string
	for _, t := range a.GetTools() {
		out = append(out, t.GetName())
	}
	return out
}

func destinationNames(a *contractv1.ActionAperture) []string {
	var out []string
	for _, t := range a.GetTools() {
		for _, d := range t.GetDestinations() {
			if !slices.Contains(out, d.GetName()) {
				out = append(out, d.GetName())
			}
		}
	}
	return out
}

// walkPages follows a listing's pages from the first, as a client does,
// and fails once it has been given more than want items: a page that
// starts over would otherwise never end.
func walkPages(t interface {
	Helper()
	Fatalf(string, ...any)
}, name string, want int, page func(after string) ([]canon.Classified, bool, bool)) []canon.Classified {
	t.Helper()
	var got []canon.Classified
	for next, more := "", true; more; {
		p, m, ok := page(next)
		if !ok || len(p) == 0 && m {
			t.Fatalf("%s after %q: %d items, more %v, ok %v", name, next, len(p), m, ok)
		}
		if got, more = append(got, p...), m; len(got) > want {
			t.Fatalf("%s: %d items walked, more than the %d there are", name, len(got), want)
		}
		if len(p) > 0 {
			next = p[len(p)-1].Item.GetCanonItemId()
		}
	}
	return got
}
