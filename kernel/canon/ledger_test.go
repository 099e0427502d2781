package canon_test

import (
	"errors"
	"strings"
	"testing"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/kernel/canon"
)

// step is one transition and the sentinel it must be refused with (nil:
// accepted).
type step struct {
	t       canon.Transition
	wantErr error
}

func ok(t canon.Transition) step                 { return step{t: t} }
func refused(t canon.Transition, err error) step { return step{t: t, wantErr: err} }

// TestLedgerRules checks each rule of the seed on its own, as a named case:
// the transitions, the refusals they must meet, and the resulting classes.
func TestLedgerRules(t *testing.T) {
	const text = "Refunds above GBP 500.00 need a second approver."
	tests := []struct {
		name  string
		auth  canon.Authorities // nil: defaultAuth
		steps []step
		// classifyAuth, when set, classifies with other authorities than
		// the ones in force when the transitions were applied.
		classifyAuth canon.Authorities
		want         map[string]ledgerv1.CanonClass
		// wantReason is a substring one of the item's reasons must hold.
		wantReason map[string]string
	}{
		// §4 identity.
		{
			name: "identity reuse with changed content is refused",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				refused(propose(1, owner, policy("POL-1", "Refunds above GBP 900.00 need a second approver.")), canon.ErrIdentityReuse),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": provisional},
		},
		{
			name: "same identity and content is an idempotent no-op",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				ok(promote(1, owner, "POL-1")),
				ok(propose(2, owner, policy("POL-1", text))),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": canonical},
		},
		{
			name: "same content with changed metadata under one identity is refused",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				refused(propose(1, owner, policy("POL-1", text, func(it *ledgerv1.CanonItem) { it.Lifetime = ledgerv1.Lifetime_LIFETIME_TASK })), canon.ErrIdentityReuse),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": provisional},
		},
		{
			name: "declared hash that is not the content's is refused",
			steps: []step{
				refused(propose(0, owner, policy("POL-1", text, func(it *ledgerv1.CanonItem) { it.ContentHash = strings.Repeat("0", 64) })), canon.ErrHashMismatch),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": unknown},
		},
		{
			name: "an item without identity is refused",
			steps: []step{
				refused(propose(0, owner, policy("", text)), canon.ErrInvalidItem),
			},
			want: map[string]ledgerv1.CanonClass{},
		},

		// §6 provenance before promotion: a reference must resolve.
		{
			name: "free-text provenance is unknown and cannot be promoted",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text, func(it *ledgerv1.CanonItem) { it.ProvenanceRef = "trust me, it is fine" }))),
				refused(promote(1, owner, "POL-1"), canon.ErrMissingProvenance),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-1": unknown},
			wantReason: map[string]string{"POL-1": "not a reference"},
		},
		{
			name: "an item reference must name another item of the ledger",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				ok(propose(1, owner, policy("POL-2", text+" (copy)", func(it *ledgerv1.CanonItem) { it.ProvenanceRef = "item:POL-1" }))),
				ok(propose(2, owner, policy("POL-3", text+" (orphan)", func(it *ledgerv1.CanonItem) { it.ProvenanceRef = "item:POL-404" }))),
				ok(promote(3, owner, "POL-2")),
				refused(promote(4, owner, "POL-3"), canon.ErrMissingProvenance),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-1": provisional, "POL-2": canonical, "POL-3": unknown},
			wantReason: map[string]string{"POL-3": "names no other item"},
		},

		// §5 origin is not authority.
		{
			name: "tool output without delegated authority is external even when approved",
			steps: []step{
				ok(propose(0, "tool-adapter", toolOutput("TOOL-1", "limit is GBP 2000"))),
				ok(promote(1, owner, "TOOL-1")),
			},
			want:       map[string]ledgerv1.CanonClass{"TOOL-1": external},
			wantReason: map[string]string{"TOOL-1": "no authority to govern SCOPE_ORGANISATION was delegated"},
		},
		{
			name: "tool output cannot claim authority its proposer does not hold",
			steps: []step{
				refused(propose(0, "tool-adapter", toolOutput("TOOL-1", "limit is GBP 2000", func(it *ledgerv1.CanonItem) {
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER
				})), canon.ErrNotAuthorised),
			},
			want: map[string]ledgerv1.CanonClass{"TOOL-1": unknown},
		},
		{
			name: "tool output with authority delegated by the owner can become canon",
			steps: []step{
				ok(propose(0, owner, toolOutput("TOOL-1", "fx rate table", func(it *ledgerv1.CanonItem) {
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED
				}))),
				ok(promote(1, owner, "TOOL-1")),
			},
			want: map[string]ledgerv1.CanonClass{"TOOL-1": canonical},
		},
		{
			name: "user input without delegated authority is external",
			steps: []step{
				ok(propose(0, "user-3", policy("USR-1", "pay me twice", func(it *ledgerv1.CanonItem) {
					it.SourceOrigin = ledgerv1.SourceOrigin_SOURCE_ORIGIN_USER
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE
				}))),
			},
			want: map[string]ledgerv1.CanonClass{"USR-1": external},
		},
		{
			name: "authority recorded by an owner who is later removed no longer counts",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				ok(promote(1, owner, "POL-1")),
			},
			classifyAuth: canon.Authorities{ledgerv1.Scope_SCOPE_ORGANISATION: {"new-owner"}},
			want:         map[string]ledgerv1.CanonClass{"POL-1": provisional},
			wantReason:   map[string]string{"POL-1": `promotion_authority "policy-owner" holds no promotion authority for SCOPE_ORGANISATION`},
		},

		// §6 provenance before promotion.
		{
			name: "an item without provenance is unknown and cannot be promoted",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text, func(it *ledgerv1.CanonItem) { it.ProvenanceRef = "" }))),
				refused(promote(1, owner, "POL-1"), canon.ErrMissingProvenance),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-1": unknown},
			wantReason: map[string]string{"POL-1": "provenance_ref is empty"},
		},
		{
			name: "an item without scope is unknown",
			steps: []step{
				ok(propose(0, agent, policy("SUM-1", "summary", func(it *ledgerv1.CanonItem) {
					it.SourceOrigin = ledgerv1.SourceOrigin_SOURCE_ORIGIN_SUMMARY
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE
					it.Scope = ledgerv1.Scope_SCOPE_UNSPECIFIED
				}))),
			},
			want: map[string]ledgerv1.CanonClass{"SUM-1": unknown},
		},

		// §7 scope is separate from lifetime.
		{
			name: "session scope with a durable lifetime is session-local",
			steps: []step{
				ok(propose(0, sessionOwner, policy("S-1", "use GBP", func(it *ledgerv1.CanonItem) { it.Scope = ledgerv1.Scope_SCOPE_SESSION }))),
				ok(promote(1, sessionOwner, "S-1")),
			},
			want: map[string]ledgerv1.CanonClass{"S-1": sessionLoc},
		},
		{
			name: "organisation scope with a session lifetime is session-local",
			steps: []step{
				ok(propose(0, owner, policy("S-1", "use GBP", func(it *ledgerv1.CanonItem) { it.Lifetime = ledgerv1.Lifetime_LIFETIME_SESSION }))),
				ok(promote(1, owner, "S-1")),
			},
			want:       map[string]ledgerv1.CanonClass{"S-1": sessionLoc},
			wantReason: map[string]string{"S-1": "lifetime LIFETIME_SESSION"},
		},
		{
			name: "task scope and lifetime can be canon for the task",
			steps: []step{
				ok(propose(0, orchestrator, policy("T-1", "one refund only", func(it *ledgerv1.CanonItem) {
					it.Scope = ledgerv1.Scope_SCOPE_TASK
					it.Lifetime = ledgerv1.Lifetime_LIFETIME_TASK
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED
				}))),
				ok(promote(1, orchestrator, "T-1")),
			},
			want: map[string]ledgerv1.CanonClass{"T-1": canonical},
		},

		// §8 promotion needs an authorised actor and an event.
		{
			name: "a proposal that claims approval is refused",
			steps: []step{
				refused(propose(0, owner, policy("POL-1", text, func(it *ledgerv1.CanonItem) {
					it.PromotionState = ledgerv1.PromotionState_PROMOTION_STATE_APPROVED
					it.PromotionAuthority = owner
				})), canon.ErrForgedDecision),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": unknown},
		},
		{
			name: "a proposal that names a promotion authority is refused",
			steps: []step{
				refused(propose(0, owner, policy("POL-1", text, func(it *ledgerv1.CanonItem) { it.PromotionAuthority = owner })), canon.ErrForgedDecision),
			},
			want: map[string]ledgerv1.CanonClass{},
		},
		{
			name: "promotion by an actor without authority for the scope is refused",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				refused(promote(1, orchestrator, "POL-1"), canon.ErrNotAuthorised),
				refused(promote(2, agent, "POL-1"), canon.ErrNotAuthorised),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-1": provisional},
			wantReason: map[string]string{"POL-1": "not promoted"},
		},
		{
			name: "agent output can never be promoted by its own proposer, even one listed as an authority",
			auth: canon.Authorities{ledgerv1.Scope_SCOPE_TASK: {agent, orchestrator}},
			steps: []step{
				ok(propose(0, agent, policy("REQ-1", "widen my contract", func(it *ledgerv1.CanonItem) {
					it.Kind = ledgerv1.ItemKind_ITEM_KIND_BOUNDARY_REQUEST
					it.SourceOrigin = ledgerv1.SourceOrigin_SOURCE_ORIGIN_AGENT
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED
					it.Scope = ledgerv1.Scope_SCOPE_TASK
				}))),
				refused(promote(1, agent, "REQ-1"), canon.ErrSelfPromotion),
			},
			want: map[string]ledgerv1.CanonClass{"REQ-1": provisional},
		},
		{
			name: "agent output promoted by another authorised actor can be canon",
			auth: canon.Authorities{ledgerv1.Scope_SCOPE_TASK: {agent, orchestrator}},
			steps: []step{
				ok(propose(0, agent, policy("REQ-1", "widen my contract", func(it *ledgerv1.CanonItem) {
					it.Kind = ledgerv1.ItemKind_ITEM_KIND_BOUNDARY_REQUEST
					it.SourceOrigin = ledgerv1.SourceOrigin_SOURCE_ORIGIN_AGENT
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED
					it.Scope = ledgerv1.Scope_SCOPE_TASK
				}))),
				ok(promote(1, orchestrator, "REQ-1")),
			},
			want: map[string]ledgerv1.CanonClass{"REQ-1": canonical},
		},
		{
			name: "agent output without authority stays provisional when promoted",
			steps: []step{
				ok(propose(0, agent, policy("OUT-1", "the refund looks fine", func(it *ledgerv1.CanonItem) {
					it.SourceOrigin = ledgerv1.SourceOrigin_SOURCE_ORIGIN_AGENT
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE
				}))),
				ok(promote(1, owner, "OUT-1")),
			},
			want:       map[string]ledgerv1.CanonClass{"OUT-1": provisional},
			wantReason: map[string]string{"OUT-1": "AUTHORITY_LEVEL_NONE"},
		},
		{
			name: "a rejected item stays provisional and cannot be promoted later",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				refused(reject(1, agent, "POL-1"), canon.ErrNotAuthorised),
				ok(reject(2, owner, "POL-1")),
				refused(promote(3, owner, "POL-1"), canon.ErrInvalidTransition),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-1": provisional},
			wantReason: map[string]string{"POL-1": `promotion rejected by "policy-owner"`},
		},
		{
			name: "approved canon is superseded, not rejected",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				ok(promote(1, owner, "POL-1")),
				refused(reject(2, owner, "POL-1"), canon.ErrInvalidTransition),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": canonical},
		},

		// §9 conflicts are preserved until an authorised owner resolves them.
		{
			name: "an authoritative item in unresolved conflict with canon is inconclusive",
			auth: canon.Authorities{ledgerv1.Scope_SCOPE_ORGANISATION: {owner, "finance-owner"}},
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				ok(promote(1, owner, "POL-1")),
				ok(propose(2, "finance-owner", policy("POL-2", "no second approver up to GBP 1000", withConflict("POL-1")))),
				refused(promote(3, "finance-owner", "POL-2"), canon.ErrUnresolvedConflict),
				refused(resolve(4, "finance-owner", "POL-2"), canon.ErrSelfPromotion),
				refused(resolve(5, agent, "POL-2"), canon.ErrNotAuthorised),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-1": canonical, "POL-2": inconcl},
			wantReason: map[string]string{"POL-1": `contested by "POL-2"`, "POL-2": `conflicts with canonical "POL-1"`},
		},
		{
			name: "an owner's resolution lets the challenger be promoted",
			auth: canon.Authorities{ledgerv1.Scope_SCOPE_ORGANISATION: {owner, "finance-owner"}},
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				ok(promote(1, owner, "POL-1")),
				ok(propose(2, "finance-owner", policy("POL-2", "receipts optional up to GBP 150", withConflict("POL-1")))),
				ok(resolve(3, owner, "POL-2")),
				refused(resolve(4, owner, "POL-2"), canon.ErrInvalidTransition),
				ok(promote(5, "finance-owner", "POL-2")),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": canonical, "POL-2": canonical},
		},
		{
			name: "a conflict with an item that is not canon blocks canon without being inconclusive",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				ok(propose(1, owner, policy("POL-2", "other", withConflict("POL-1")))),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-1": provisional, "POL-2": provisional},
			wantReason: map[string]string{"POL-2": `unresolved conflict with "POL-1" (CANON_CLASS_PROVISIONAL)`},
		},
		{
			name: "a conflict must name an item the ledger holds",
			steps: []step{
				refused(propose(0, owner, policy("POL-2", "other", withConflict("POL-404"))), canon.ErrUnknownItem),
			},
			want: map[string]ledgerv1.CanonClass{},
		},

		// §10 supersession is not deletion.
		{
			name: "supersession keeps the old item as deprecated",
			steps: []step{
				ok(propose(0, owner, policy("POL-8", "limit GBP 800"))),
				ok(promote(1, owner, "POL-8")),
				ok(propose(2, owner, policy("POL-9", "limit GBP 500", withSupersedes("POL-8")))),
				refused(supersede(3, agent, "POL-8", "POL-9"), canon.ErrNotAuthorised),
				ok(promote(4, owner, "POL-9")),
				ok(supersede(4, owner, "POL-8", "POL-9")),
				refused(promote(5, owner, "POL-8"), canon.ErrSuperseded),
				refused(supersede(6, owner, "POL-8", "POL-9"), canon.ErrSuperseded),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-8": deprecated, "POL-9": canonical},
			wantReason: map[string]string{"POL-8": `superseded by "POL-9"`},
		},
		{
			name: "supersession needs the new item's explicit reference",
			steps: []step{
				ok(propose(0, owner, policy("POL-8", "limit GBP 800"))),
				ok(propose(1, owner, policy("POL-9", "limit GBP 500"))),
				refused(supersede(2, owner, "POL-8", "POL-9"), canon.ErrInvalidTransition),
				refused(supersede(3, owner, "POL-8", "POL-404"), canon.ErrUnknownItem),
			},
			want: map[string]ledgerv1.CanonClass{"POL-8": provisional, "POL-9": provisional},
		},

		// §11 and §14 handoff.
		{
			name: "a handoff without a filter is hold, even when promoted",
			steps: []step{
				ok(propose(0, owner, contractItem("CTR-1", refundContract()))),
				ok(promote(1, owner, "CTR-1")),
				ok(derive(2, orchestrator, "CTR-1", childTemplate("CTR-1/b"), nil)),
				ok(promote(3, orchestrator, "CTR-1/b")),
			},
			want: map[string]ledgerv1.CanonClass{"CTR-1": canonical, "CTR-1/b": hold},
		},
		{
			name: "a filtered child is recomputed, not copied: provisional until promoted",
			steps: []step{
				ok(propose(0, owner, contractItem("CTR-1", refundContract()))),
				ok(promote(1, owner, "CTR-1")),
				ok(derive(2, orchestrator, "CTR-1", childTemplate("CTR-1/b"), &ledgerv1.HandoffFilter{Fields: []string{"claim_id"}})),
			},
			want: map[string]ledgerv1.CanonClass{"CTR-1": canonical, "CTR-1/b": provisional},
		},
		{
			name: "a child loses canon when its parent is superseded",
			steps: []step{
				ok(propose(0, owner, contractItem("CTR-1", refundContract()))),
				ok(promote(1, owner, "CTR-1")),
				ok(derive(2, orchestrator, "CTR-1", childTemplate("CTR-1/b"), &ledgerv1.HandoffFilter{Tools: []string{"refund"}})),
				ok(promote(3, orchestrator, "CTR-1/b")),
				ok(propose(4, owner, policy("POL-X", "all refunds stop", withSupersedes("CTR-1")))),
				ok(supersede(5, owner, "CTR-1", "POL-X")),
				refused(derive(6, orchestrator, "CTR-1", childTemplate("CTR-1/c"), &ledgerv1.HandoffFilter{}), canon.ErrSuperseded),
			},
			want:       map[string]ledgerv1.CanonClass{"CTR-1": deprecated, "CTR-1/b": provisional},
			wantReason: map[string]string{"CTR-1/b": `handoff parent "CTR-1" is CANON_CLASS_DEPRECATED`},
		},
		{
			name: "a proposal cannot forge a handoff",
			steps: []step{
				ok(propose(0, owner, contractItem("CTR-1", refundContract()))),
				refused(propose(1, orchestrator, contractItem("CTR-1/b", refundContract(), func(it *ledgerv1.CanonItem) {
					it.HandoffParentRef = "CTR-1"
					it.HandoffFilterDeclared = true
					it.Scope = ledgerv1.Scope_SCOPE_TASK
					it.AuthorityLevel = ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED
				})), canon.ErrForgedDecision),
			},
			want: map[string]ledgerv1.CanonClass{"CTR-1": provisional},
		},
		{
			name: "a child's content is derived, never declared",
			steps: []step{
				ok(propose(0, owner, contractItem("CTR-1", refundContract()))),
				refused(derive(1, orchestrator, "CTR-1", func() *ledgerv1.CanonItem {
					c := childTemplate("CTR-1/b")
					c.Contract = refundContract()
					return c
				}(), &ledgerv1.HandoffFilter{}), canon.ErrInvalidItem),
				refused(derive(2, orchestrator, "POL-404", childTemplate("CTR-1/b"), nil), canon.ErrUnknownItem),
			},
			want: map[string]ledgerv1.CanonClass{"CTR-1": provisional},
		},
		{
			name: "a handoff derives only from a contract",
			steps: []step{
				ok(propose(0, owner, policy("POL-1", text))),
				refused(derive(1, orchestrator, "POL-1", childTemplate("POL-1/b"), nil), canon.ErrInvalidTransition),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": provisional},
		},

		// Transitions themselves.
		{
			name: "a transition earlier than the last is refused",
			steps: []step{
				ok(propose(5, owner, policy("POL-1", text))),
				refused(promote(4, owner, "POL-1"), canon.ErrInvalidTransition),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": provisional},
		},
		{
			name: "a transition without an actor or kind is refused",
			steps: []step{
				refused(propose(0, "", policy("POL-1", text)), canon.ErrInvalidTransition),
				refused(canon.Transition{At: at(1), Actor: owner}, canon.ErrInvalidTransition),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": unknown},
		},
		{
			name: "a transition carrying fields its kind does not use is refused",
			steps: []step{
				refused(canon.Transition{Kind: canon.Propose, At: at(0), Actor: owner, Item: policy("POL-1", text), ItemID: "POL-1"}, canon.ErrInvalidTransition),
				ok(propose(1, owner, policy("POL-1", text))),
				refused(canon.Transition{Kind: canon.Promote, At: at(2), Actor: owner, ItemID: "POL-1", Item: policy("POL-1", text)}, canon.ErrInvalidTransition),
				refused(canon.Transition{Kind: canon.Promote, At: at(3), Actor: owner, ItemID: "POL-1", OtherID: "POL-2"}, canon.ErrInvalidTransition),
				refused(canon.Transition{Kind: canon.Reject, At: at(4), Actor: owner, ItemID: "POL-1", Filter: &ledgerv1.HandoffFilter{}}, canon.ErrInvalidTransition),
			},
			want: map[string]ledgerv1.CanonClass{"POL-1": provisional},
		},
		{
			name: "promoting an unknown item is refused",
			steps: []step{
				refused(promote(0, owner, "POL-404"), canon.ErrUnknownItem),
			},
			want:       map[string]ledgerv1.CanonClass{"POL-404": unknown},
			wantReason: map[string]string{"POL-404": "no item"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			auth := tc.auth
			if auth == nil {
				auth = defaultAuth()
			}
			s := &canon.State{}
			for i, st := range tc.steps {
				err := s.Apply(st.t, auth)
				if st.wantErr == nil && err != nil {
					t.Errorf("step %d (%s): unexpected refusal: %v", i, st.t.Kind, err)
				}
				if st.wantErr != nil && !errors.Is(err, st.wantErr) {
					t.Errorf("step %d (%s): got %v, want refusal %v", i, st.t.Kind, err, st.wantErr)
				}
			}
			cauth := tc.classifyAuth
			if cauth == nil {
				cauth = auth
			}
			got := map[string]ledgerv1.CanonClass{}
			for id := range tc.want {
				got[id] = canon.Classify(s, id, cauth).Class
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				for id := range tc.want {
					t.Logf("%s: %q", id, canon.Classify(s, id, cauth).Reasons)
				}
				t.Errorf("classes (-want +got):\n%s", d)
			}
			for id, sub := range tc.wantReason {
				reasons := canon.Classify(s, id, cauth).Reasons
				if !strings.Contains(strings.Join(reasons, "\n"), sub) {
					t.Errorf("%s: reasons %q lack %q", id, reasons, sub)
				}
			}
		})
	}
}
