package authority_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestSelfViewAnswersGrantedFacts(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	all := []string{"capabilities", "uncertainty", "commitments", "expiry"}

	fresh, err := w.k.SelfView(w.ctx, agentName, task, all)
	if err != nil {
		t.Fatalf("SelfView: %v", err)
	}
	want := &agentv1.GetSelfViewResponse{
		Capabilities: []string{"refund"},
		Uncertainty:  []string{},
		Commitments:  []*agentv1.Commitment{},
		ExpiresAt:    timestampAt(start.Add(48 * time.Hour)),
	}
	if diff := cmp.Diff(want, fresh, protocmp.Transform(),
		protocmp.IgnoreFields(&agentv1.GetSelfViewResponse{}, "tools", "sources", "record", "purpose")); diff != "" {
		t.Errorf("fresh task (-want +got):\n%s", diff)
	}
	// With the capabilities come the tools to list, the sources to read,
	// and the record and purpose to name.
	if len(fresh.GetTools()) != 1 || fresh.GetTools()[0].GetName() != "refund" ||
		fresh.GetTools()[0].GetInputSchema().GetFields()["type"].GetStringValue() != "object" {
		t.Errorf("tools = %v, want refund with its schema", fresh.GetTools())
	}
	if len(fresh.GetSources()) != 2 || fresh.GetSources()[0].GetName() != claimsDB || len(fresh.GetSources()[0].GetFields()) != 5 {
		t.Errorf("sources = %v", fresh.GetSources())
	}
	if fresh.GetRecord().GetKey() != claimKey || fresh.GetPurpose() != purpose {
		t.Errorf("record %v, purpose %q", fresh.GetRecord(), fresh.GetPurpose())
	}

	// Only what was asked is answered.
	only, err := w.k.SelfView(w.ctx, agentName, task, []string{"expiry"})
	if err != nil {
		t.Fatal(err)
	}
	if only.GetCapabilities() != nil || only.GetUncertainty() != nil || only.GetCommitments() != nil || only.GetExpiresAt() == nil {
		t.Errorf("asked for expiry, got %v", only)
	}

	// After the one action is granted, nothing more can be proposed; the
	// commitment is reported.
	d, c := w.allowed(task)
	used, err := w.k.SelfView(w.ctx, agentName, task, all)
	if err != nil {
		t.Fatal(err)
	}
	if len(used.GetCapabilities()) != 0 {
		t.Errorf("capabilities after the one action = %v, want none", used.GetCapabilities())
	}
	if len(used.GetCommitments()) != 1 || used.GetCommitments()[0].GetCapabilityId() != c.GetCapabilityId() ||
		used.GetCommitments()[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED ||
		used.GetCommitments()[0].GetDecisionId() != d.GetDecisionId() {
		t.Errorf("commitments = %v", used.GetCommitments())
	}

	// Redeemed and awaiting its effect: reported as uncertainty.
	w.redeemed(d.GetCapability(), c)
	open, err := w.k.SelfView(w.ctx, agentName, task, []string{"uncertainty"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(open.GetUncertainty(), func(s string) bool { return strings.Contains(s, "awaits its effect receipt") }) {
		t.Errorf("uncertainty = %q, want the open commitment", open.GetUncertainty())
	}
}

func TestSelfViewCapabilitiesRevealNoLimits(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) {
		c.Action.Tools = append(c.Action.Tools, emailTool())
		c.Action.MaxActions = 3
	})
	v, err := w.k.SelfView(w.ctx, agentName, task, []string{"capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"refund", "email_attachment"}, v.GetCapabilities()); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	for _, s := range v.GetCapabilities() {
		if !slices.Contains([]string{"refund", "email_attachment"}, s) || strings.ContainsAny(s, "0123456789") || strings.Contains(s, "GBP") {
			t.Errorf("capability %q is not a bare action type", s)
		}
	}
}

func TestSelfViewRefusals(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	// A contract that shows policy_thresholds and credentials: the kernel
	// still never answers them.
	w.canonicalTask("leaky-task", func(c *contractv1.Contract) {
		c.Reflexive.VisibleFacts = append(c.Reflexive.VisibleFacts, "policy_thresholds", "credentials", "contract")
	})
	tests := []struct {
		name   string
		task   string
		facts  []string
		kind   error
		reason string
		names  []string
	}{
		{"policy thresholds", task, []string{"policy_thresholds"}, authority.ErrDenied, "SELF_FACTS_OUTSIDE_VIEW", []string{"policy_thresholds"}},
		{"credentials", task, []string{"credentials"}, authority.ErrDenied, "SELF_FACTS_OUTSIDE_VIEW", []string{"credentials"}},
		{"granted with hidden", task, []string{"capabilities", "credentials", "policy_thresholds"}, authority.ErrDenied, "SELF_FACTS_OUTSIDE_VIEW", []string{"credentials", "policy_thresholds"}},
		{"unknown fact", task, []string{"salary"}, authority.ErrDenied, "SELF_FACTS_OUTSIDE_VIEW", []string{"salary"}},
		{"visible but never answered", "leaky-task", []string{"expiry", "policy_thresholds", "credentials"}, authority.ErrDenied, "SELF_FACTS_NEVER_ANSWERED", []string{"policy_thresholds", "credentials"}},
		{"contract never answered", "leaky-task", []string{"contract"}, authority.ErrDenied, "SELF_FACTS_NEVER_ANSWERED", []string{"contract"}},
		{"no facts", task, nil, authority.ErrInvalid, "INVALID_REQUEST", nil},
		{"no task", "", []string{"expiry"}, authority.ErrInvalid, "INVALID_REQUEST", nil},
		{"unbound task", "nope", []string{"expiry"}, authority.ErrStale, "TASK_NOT_BOUND", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := w.k.SelfView(w.ctx, agentName, tt.task, tt.facts)
			if v != nil {
				t.Errorf("a refused self-view returned %v", v)
			}
			wantRefusal(t, err, tt.kind, tt.reason)
			for _, n := range tt.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("refusal %q does not name %s", err, n)
				}
			}
		})
	}
}

func TestSelfViewUncertainty(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	old, _ := w.read(task)
	review := w.submit(proposal(task, refund(7400, subject), old))
	allow := w.submit(proposal(task, refund(1740, subject), old))
	c := w.openCapability(allow.GetCapability())

	v, err := w.k.SelfView(w.ctx, agentName, task, []string{"uncertainty"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"approval " + review.GetApprovalId() + " pending"}, v.GetUncertainty()); diff != "" {
		t.Errorf("uncertainty (-want +got):\n%s", diff)
	}

	w.changed(task, version43)
	v, err = w.k.SelfView(w.ctx, agentName, task, []string{"uncertainty", "commitments"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"state version changed: the contract is bound to claims-v42, the record is now at claims-v43",
		"capability " + c.GetCapabilityId() + " revoked: state version changed: claims-v42 → claims-v43",
	}
	if diff := cmp.Diff(want, v.GetUncertainty()); diff != "" {
		t.Errorf("uncertainty after the state change (-want +got):\n%s", diff)
	}
	if len(v.GetCommitments()) != 1 || v.GetCommitments()[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED {
		t.Errorf("commitments = %v, want one REVOKED", v.GetCommitments())
	}
}

// TestSelfViewBoundsCommitments: capabilities that expire unused stop
// counting against the action limit, so an agent can make any number of
// them. A view lists and describes MaxListedCommitments of them at most:
// every open one, then the newest, and says how many it leaves out.
func TestSelfViewBoundsCommitments(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) {
		c.Binding.ValidUntil = timestamppb.New(start.Add(30 * 24 * time.Hour))
		c.Action.MaxActions = 2
	})
	// The oldest stays open: redeemed, its effect still to come.
	first, c := w.allowed(task)
	w.redeemed(first.GetCapability(), c)
	var expired []string
	for range authority.MaxListedCommitments {
		_, c := w.allowed(task)
		expired = append(expired, c.GetCapabilityId())
		w.clock.Advance(6 * time.Minute) // past the capability's 5 minutes
	}
	v, err := w.k.SelfView(w.ctx, agentName, task, []string{"commitments", "uncertainty"})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, cm := range v.GetCommitments() {
		listed = append(listed, cm.GetCapabilityId())
	}
	// The oldest expired one is left out.
	if want := append([]string{c.GetCapabilityId()}, expired[1:]...); !slices.Equal(listed, want) || v.GetCommitmentsOmitted() != 1 {
		t.Errorf("listed %d commitments (first %v), %d omitted; want %d, the open one first, 1 omitted",
			len(listed), listed[:min(len(listed), 2)], v.GetCommitmentsOmitted(), len(want))
	}
	described := 0
	for _, u := range v.GetUncertainty() {
		if strings.HasPrefix(u, "capability ") || strings.HasPrefix(u, "commitment ") {
			described++
		}
		if strings.Contains(u, expired[0]) {
			t.Errorf("the commitment left out is described: %q", u)
		}
	}
	if described != authority.MaxListedCommitments || !slices.Contains(v.GetUncertainty(), "commitments not described: 1 of 1001 (a view describes 1000 at most: the open ones, then the newest)") {
		t.Errorf("%d commitments described, and no line for the one left out in %d lines", described, len(v.GetUncertainty()))
	}
}

// TestBoundaryChange is coupling rule 4: a request to widen the boundary
// becomes a governance item; the running contract is unchanged.
func TestBoundaryChange(t *testing.T) {
	w := newWorld(t)
	bound := w.canonicalTask(task)

	tests := []struct {
		name        string
		task, descr string
		kind        error
		reason      string
	}{
		{"no description", task, "", authority.ErrInvalid, "INVALID_REQUEST"},
		{"no task", "", "raise my limit", authority.ErrInvalid, "INVALID_REQUEST"},
		{"too long", task, strings.Repeat("x", 4097), authority.ErrInvalid, "INVALID_REQUEST"},
		{"unbound task", "nope", "raise my limit", authority.ErrStale, "TASK_NOT_BOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.k.BoundaryChange(w.ctx, agentName, tt.task, tt.descr)
			wantRefusal(t, err, tt.kind, tt.reason)
		})
	}

	req, err := w.k.BoundaryChange(w.ctx, agentName, task, "raise the refund limit to GBP 500 and reveal the approval threshold")
	if err != nil {
		t.Fatalf("BoundaryChange: %v", err)
	}
	it := req.Item
	if req.Class != ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL || it.GetKind() != ledgerv1.ItemKind_ITEM_KIND_BOUNDARY_REQUEST ||
		it.GetSourceOrigin() != ledgerv1.SourceOrigin_SOURCE_ORIGIN_AGENT || it.GetAuthorityLevel() != ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE ||
		it.GetContract() != nil || it.GetProvenanceRef() == "" {
		t.Errorf("boundary request = %s %v", req.Class, it)
	}

	// The agent cannot promote its own request.
	_, err = w.k.PromoteItem(w.ctx, agentName, it.GetCanonItemId())
	wantRefusal(t, err, authority.ErrDenied, "LEDGER_SELF_PROMOTION")

	// Even the owner's promotion does not make it canonical, nor change the
	// task's contract.
	promoted, err := w.k.PromoteItem(w.ctx, owner, it.GetCanonItemId())
	if err != nil {
		t.Fatalf("owner promotes the request: %v", err)
	}
	if promoted.Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("an agent's boundary request became CANONICAL")
	}
	now := w.item(bound.Item.GetCanonItemId())
	if diff := cmp.Diff(bound.Item, now.Item, protocmp.Transform()); diff != "" {
		t.Errorf("the task's contract item changed (-before +after):\n%s", diff)
	}
	if now.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("the task's contract is %s", now.Class)
	}
	// Decisions still run under the original contract: GBP 200 is above
	// its hard limit.
	env, _ := w.read(task)
	d := w.submit(proposal(task, refund(20000, subject), env))
	if got := verdictOf(d); got.Outcome != "OUTCOME_DENY" || !slices.Contains(got.Codes, "AMOUNT_EXCEEDS_HARD_LIMIT") {
		t.Errorf("after the request: %+v, want DENY AMOUNT_EXCEEDS_HARD_LIMIT", got)
	}
	var dr receiptv1.DecisionReceipt
	if err := w.keys.Open(d.GetDecisionReceipt(), kernelKey, &dr); err != nil {
		t.Fatal(err)
	}
	if dr.GetContractHash() != bound.Item.GetContentHash() || dr.GetContractItemId() != bound.Item.GetCanonItemId() {
		t.Errorf("decided under %s %s, want the original contract", dr.GetContractItemId(), dr.GetContractHash())
	}
}
