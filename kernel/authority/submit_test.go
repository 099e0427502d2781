package authority_test

import (
	"google.golang.org/protobuf/proto"
	"slices"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
)

const task = "refund-claim-1001"

func TestSubmitAllowIssuesBoundCapability(t *testing.T) {
	w := newWorld(t)
	item := w.canonicalTask(task)
	d, c := w.allowed(task)

	if diff := cmp.Diff(verdict{"OUTCOME_ALLOW", []string{"ALL_APERTURES_SATISFIED"}}, verdictOf(d)); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	if d.ApprovalID != "" {
		t.Errorf("ApprovalID = %q on ALLOW, want none", d.ApprovalID)
	}
	if c.GetCapabilityId() == "" || c.GetIdempotencyKey() == "" {
		t.Fatalf("capability lacks id or idempotency key: %v", c)
	}
	want := &receiptv1.Capability{
		CapabilityId:   c.GetCapabilityId(),
		DecisionId:     d.DecisionID,
		TaskId:         task,
		ContractHash:   item.Item.GetContentHash(),
		Action:         refund(1740, subject),
		Destination:    "claimant",
		StateVersion:   version42,
		Holder:         agentName,
		IdempotencyKey: c.GetIdempotencyKey(),
		IssuedAt:       c.GetIssuedAt(),
		ExpiresAt:      c.GetExpiresAt(),
	}
	if diff := cmp.Diff(want, c, protocmp.Transform()); diff != "" {
		t.Errorf("capability (-want +got):\n%s", diff)
	}
	if got, want := c.GetIssuedAt().AsTime(), start; !got.Equal(want) {
		t.Errorf("issued_at = %s, want %s", got, want)
	}
	if got, want := c.GetExpiresAt().AsTime(), start.Add(5*time.Minute); !got.Equal(want) {
		t.Errorf("expires_at = %s, want the default TTL %s", got, want)
	}

	// The decision receipt verifies with the kernel key and names the
	// contract and the journal head it was decided at.
	var dr receiptv1.DecisionReceipt
	if err := (envelope.Keyring{kernelKey: w.keys[kernelKey]}).Open(d.Receipt, kernelKey, &dr); err != nil {
		t.Fatalf("decision receipt does not verify: %v", err)
	}
	// Another key does not verify it.
	if err := (envelope.Keyring{kernelKey: w.keys[evidenceID]}).Open(d.Receipt, kernelKey, &dr); err == nil {
		t.Errorf("decision receipt verifies with the evidence adapter's key")
	}
	if dr.GetDecisionId() != d.DecisionID || dr.GetTaskId() != task || dr.GetAgent() != agentName {
		t.Errorf("receipt ids = %q/%q/%q", dr.GetDecisionId(), dr.GetTaskId(), dr.GetAgent())
	}
	if dr.GetContractItemId() != "CTR-"+task || dr.GetContractHash() != item.Item.GetContentHash() {
		t.Errorf("receipt contract = %q %q, want %q %q", dr.GetContractItemId(), dr.GetContractHash(), "CTR-"+task, item.Item.GetContentHash())
	}
	if dr.GetCapabilityId() != c.GetCapabilityId() {
		t.Errorf("receipt capability = %q, want %q", dr.GetCapabilityId(), c.GetCapabilityId())
	}
	if len(dr.GetEvidence()) != 1 || dr.GetEvidence()[0].GetPayloadHash() == "" {
		t.Errorf("receipt evidence refs = %v, want one with a payload hash", dr.GetEvidence())
	}
	if dr.GetFacts().GetSubject() != subject || dr.GetFacts().GetStateVersion() != version42 || dr.GetFacts().GetDestination() != "claimant" {
		t.Errorf("receipt facts = %v", dr.GetFacts())
	}
	es := w.entries()
	i := slices.IndexFunc(es, func(e journalEntry) bool { return e.Kind == "capability" && e.Ref == c.GetCapabilityId() })
	if i < 1 {
		t.Fatalf("no capability entry in the journal: %v", kinds(es))
	}
	// The capability is appended with the decision, after its head was read.
	if want := rootOf(es[:i]); dr.GetLedgerHead() != want {
		t.Errorf("ledger head = %q, want the root before the decision %q", dr.GetLedgerHead(), want)
	}
	if last := es[len(es)-1]; last.Kind != "decision" || last.Ref != d.DecisionID {
		t.Errorf("last entry = %s %s, want the decision", last.Kind, last.Ref)
	}
}

func TestSubmitApprovalFlow(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)
	over := refund(7400, subject) // GBP 74.00: above the GBP 50.00 approval threshold

	d := w.submit(proposal(task, over, env))
	if diff := cmp.Diff(verdict{"OUTCOME_REVIEW", []string{"APPROVAL_REQUIRED"}}, verdictOf(d)); diff != "" {
		t.Fatalf("verdict (-want +got):\n%s", diff)
	}
	if d.Capability != nil || d.ApprovalID == "" {
		t.Fatalf("REVIEW gave capability=%v approval=%q; want none and an approval", d.Capability != nil, d.ApprovalID)
	}
	pending, err := w.k.Approvals(w.ctx, kernelv1.ApprovalState_APPROVAL_STATE_UNSPECIFIED)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].GetApprovalId() != d.ApprovalID || pending[0].GetTaskId() != task {
		t.Fatalf("pending approvals = %v, want %s", pending, d.ApprovalID)
	}

	// A pending approval grants nothing.
	p := proposal(task, over, env)
	p.ApprovalID = d.ApprovalID
	_, err = w.k.Submit(w.ctx, p)
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_APPROVED")

	a, err := w.k.DecideApproval(w.ctx, "approver", d.ApprovalID, true, "receipt checked")
	if err != nil {
		t.Fatalf("DecideApproval: %v", err)
	}
	if a.GetState() != kernelv1.ApprovalState_APPROVAL_STATE_APPROVED || a.GetDecidedBy() != "approver" {
		t.Fatalf("approval = %v", a)
	}
	// Deciding twice is refused.
	_, err = w.k.DecideApproval(w.ctx, "approver", d.ApprovalID, false, "")
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_PENDING")

	// The approval is bound to exactly this effect.
	other := proposal(task, refund(7500, subject), env)
	other.ApprovalID = d.ApprovalID
	_, err = w.k.Submit(w.ctx, other)
	wantRefusal(t, err, authority.ErrInvalid, "APPROVAL_OTHER_EFFECT")
	unknown := proposal(task, over, env)
	unknown.ApprovalID = "apr-nope"
	_, err = w.k.Submit(w.ctx, unknown)
	wantRefusal(t, err, authority.ErrNotFound, "APPROVAL_NOT_FOUND")

	got := w.submit(p)
	if diff := cmp.Diff(verdict{"OUTCOME_ALLOW", []string{"ALL_APERTURES_SATISFIED"}}, verdictOf(got)); diff != "" {
		t.Fatalf("with approval (-want +got):\n%s", diff)
	}
	if got.Capability == nil {
		t.Fatal("ALLOW without a capability")
	}
	consumed, err := w.k.Approvals(w.ctx, kernelv1.ApprovalState_APPROVAL_STATE_CONSUMED)
	if err != nil {
		t.Fatal(err)
	}
	if len(consumed) != 1 || consumed[0].GetApprovalId() != d.ApprovalID {
		t.Fatalf("consumed approvals = %v, want %s", consumed, d.ApprovalID)
	}
	// A consumed approval cannot be used again.
	_, err = w.k.Submit(w.ctx, p)
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_APPROVED")
}

func TestSubmitRejectedApproval(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)
	d := w.submit(proposal(task, refund(7400, subject), env))
	if _, err := w.k.DecideApproval(w.ctx, "approver", d.ApprovalID, false, "no receipt"); err != nil {
		t.Fatal(err)
	}
	p := proposal(task, refund(7400, subject), env)
	p.ApprovalID = d.ApprovalID
	before := len(w.entries())
	_, err := w.k.Submit(w.ctx, p)
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_APPROVED")
	if after := len(w.entries()); after != before {
		t.Errorf("a refused proposal journaled %d entries", after-before)
	}
}

func TestSubmitDecisions(t *testing.T) {
	email := &contractv1.Action{Kind: &contractv1.Action_EmailAttachment{EmailAttachment: &contractv1.EmailAttachment{
		Recipient: "someone@example.com", Fields: []string{"claim_id"},
	}}}
	tests := []struct {
		name     string
		action   *contractv1.Action
		edit     func(*contractv1.Contract)
		before   func(w *world) // runs after the evidence is read
		want     verdict
		approval bool
		partial  bool // want.Codes need only be among the reasons
	}{
		{
			name:   "refund within limits",
			action: refund(1740, subject),
			want:   verdict{"OUTCOME_ALLOW", []string{"ALL_APERTURES_SATISFIED"}},
		},
		{
			name:   "payee is another customer",
			action: refund(1740, "employee-9"),
			want:   verdict{"OUTCOME_DENY", []string{"DESTINATION_OUTSIDE_GRANT"}},
		},
		{
			name:   "email attachment",
			action: email,
			want:   verdict{"OUTCOME_DENY", []string{"ACTION_TYPE_OUTSIDE_GRANT", "DESTINATION_OUTSIDE_GRANT"}},
		},
		{
			name:   "above the hard limit",
			action: refund(10001, subject),
			want:   verdict{"OUTCOME_DENY", []string{"AMOUNT_EXCEEDS_HARD_LIMIT", "CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}},
		},
		{
			name:   "other currency",
			action: &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{ClaimId: claimKey, PayeeId: subject, Amount: &contractv1.Money{CurrencyCode: "EUR", MinorUnits: 100}}}},
			want:   verdict{"OUTCOME_DENY", []string{"CURRENCY_OUTSIDE_GRANT"}},
		},
		{
			name:   "another claim than the bound record",
			action: &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{ClaimId: "C-2002", PayeeId: subject, Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 100}}}},
			want:   verdict{"OUTCOME_DENY", []string{"RECORD_OUTSIDE_BINDING"}},
			// No cited evidence concerns C-2002, so other reasons follow
			// (see TestSubmitWithoutEvidence); only this one is pinned.
			partial: true,
		},
		{
			name:     "over the approval threshold",
			action:   refund(7400, subject),
			want:     verdict{"OUTCOME_REVIEW", []string{"APPROVAL_REQUIRED"}},
			approval: true,
		},
		{
			name:   "evidence older than max age",
			action: refund(1740, subject),
			before: func(w *world) { w.clock.Advance(86401 * time.Second) },
			want:   verdict{"OUTCOME_REVIEW", []string{"EVIDENCE_TOO_OLD"}},
		},
		{
			name:   "evidence exactly max age",
			action: refund(1740, subject),
			before: func(w *world) { w.clock.Advance(86400 * time.Second) },
			want:   verdict{"OUTCOME_ALLOW", []string{"ALL_APERTURES_SATISFIED"}},
		},
		{
			name:   "contract expired",
			action: refund(1740, subject),
			edit: func(c *contractv1.Contract) {
				c.Binding.ValidUntil = timestampAt(start.Add(time.Hour))
			},
			before: func(w *world) { w.clock.Advance(time.Hour + time.Second) },
			want:   verdict{"OUTCOME_REVIEW", []string{"CONTRACT_EXPIRED"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			var edits []func(*contractv1.Contract)
			if tt.edit != nil {
				edits = append(edits, tt.edit)
			}
			w.canonicalTask(task, edits...)
			env, _ := w.read(task)
			if tt.before != nil {
				tt.before(w)
			}
			before := len(w.entries())
			d := w.submit(proposal(task, tt.action, env))
			got := verdictOf(d)
			if tt.partial {
				got.Codes = slices.DeleteFunc(got.Codes, func(c string) bool { return !slices.Contains(tt.want.Codes, c) })
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			if (d.Capability != nil) != (tt.want.Outcome == "OUTCOME_ALLOW") {
				t.Errorf("capability issued = %v for %s", d.Capability != nil, tt.want.Outcome)
			}
			if got := d.ApprovalID != ""; got != tt.approval {
				t.Errorf("approval created = %v, want %v", got, tt.approval)
			}
			// Every decision is journaled, an ALLOW with its capability.
			want := []string{"decision"}
			if d.Capability != nil {
				want = []string{"capability", "decision"}
			}
			if diff := cmp.Diff(want, kinds(w.entries()[before:])); diff != "" {
				t.Errorf("journaled (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubmitRefusalsChangeNothing(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	w.canonicalTask("other-task")
	env, _ := w.read(task)
	otherEnv, _ := w.read("other-task")

	// A receipt the evidence adapter signed but never recorded.
	unrecorded := w.sign(w.evidence, w.evidenceReceipt(task))
	// The right key id with another key, and an unknown key id.
	impostor, _ := newSigner(t, evidenceID)
	forged := w.sign(impostor, w.evidenceReceipt(task))
	unknownKey := w.sign(w.stranger, w.evidenceReceipt(task))
	// A receipt of another type.
	wrongType := w.sign(w.evidence, &receiptv1.EffectReceipt{ReceiptId: "x", TaskId: task})
	// Recorded, then edited and re-signed by the adapter: not the bytes
	// the kernel recorded.
	rec := w.evidenceReceipt(task)
	if _, err := w.k.RecordEvidence(w.ctx, evidenceID, w.sign(w.evidence, rec)); err != nil {
		t.Fatal(err)
	}
	rec.Fields = []string{"claim_id"}
	resigned := w.sign(w.evidence, rec)

	money := func(code string, minor int64) *contractv1.Action {
		a := refund(1, subject)
		a.GetRefund().Amount = &contractv1.Money{CurrencyCode: code, MinorUnits: minor}
		return a
	}
	tests := []struct {
		name   string
		p      authority.Proposal
		kind   error
		reason string
	}{
		{"zero amount", proposal(task, money("GBP", 0), env), authority.ErrInvalid, "INVALID_AMOUNT"},
		{"negative amount", proposal(task, money("GBP", -1740), env), authority.ErrInvalid, "INVALID_AMOUNT"},
		{"unknown currency", proposal(task, money("XXX", 1740), env), authority.ErrInvalid, "INVALID_AMOUNT"},
		{"lower-case currency", proposal(task, money("gbp", 1740), env), authority.ErrInvalid, "INVALID_AMOUNT"},
		{"no amount", proposal(task, &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{ClaimId: claimKey, PayeeId: subject}}}, env), authority.ErrInvalid, "INVALID_AMOUNT"},
		{"empty claim", proposal(task, &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{PayeeId: subject, Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 1}}}}, env), authority.ErrInvalid, "INVALID_ACTION"},
		{"empty payee", proposal(task, &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{ClaimId: claimKey, Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 1}}}}, env), authority.ErrInvalid, "INVALID_ACTION"},
		{"empty task", proposal("", refund(1740, subject), env), authority.ErrInvalid, "INVALID_PROPOSAL"},
		{"empty purpose", authority.Proposal{Agent: agentName, TaskID: task, Action: refund(1740, subject), Evidence: []*receiptv1.Envelope{env}}, authority.ErrInvalid, "INVALID_PROPOSAL"},
		{"missing action", proposal(task, nil, env), authority.ErrInvalid, "INVALID_ACTION"},
		{"empty action", proposal(task, &contractv1.Action{}, env), authority.ErrInvalid, "INVALID_ACTION"},
		{"too much evidence", proposal(task, refund(1740, subject), slices.Repeat([]*receiptv1.Envelope{env}, 17)...), authority.ErrInvalid, "INVALID_PROPOSAL"},
		{"unbound task", proposal("unbound-task", refund(1740, subject), env), authority.ErrStale, "TASK_NOT_BOUND"},
		{"evidence never recorded", proposal(task, refund(1740, subject), unrecorded), authority.ErrInvalid, "EVIDENCE_UNRECORDED"},
		{"tampered evidence", proposal(task, refund(1740, subject), flip(env)), authority.ErrInvalid, "EVIDENCE_INVALID"},
		{"evidence signed by another key", proposal(task, refund(1740, subject), forged), authority.ErrInvalid, "EVIDENCE_UNRECORDED"},
		{"evidence signed by an unknown key", proposal(task, refund(1740, subject), unknownKey), authority.ErrInvalid, "EVIDENCE_UNRECORDED"},
		{"evidence of another type", proposal(task, refund(1740, subject), wrongType), authority.ErrInvalid, "EVIDENCE_INVALID"},
		{"evidence re-signed after recording", proposal(task, refund(1740, subject), resigned), authority.ErrInvalid, "EVIDENCE_INVALID"},
		{"evidence for another task", proposal(task, refund(1740, subject), otherEnv), authority.ErrInvalid, "EVIDENCE_OTHER_TASK"},
		{"evidence cited twice", proposal(task, refund(1740, subject), env, env), authority.ErrInvalid, "EVIDENCE_DUPLICATE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.entries()
			d, err := w.k.Submit(w.ctx, tt.p)
			if d != nil {
				t.Errorf("Submit answered %v with a refusal", d)
			}
			wantRefusal(t, err, tt.kind, tt.reason)
			after := w.entries()
			if diff := cmp.Diff(kinds(before), kinds(after)); diff != "" {
				t.Errorf("a refusal changed the journal (-before +after):\n%s", diff)
			}
		})
	}
	// None of the refusals used up the task's one action.
	d := w.submit(proposal(task, refund(1740, subject), env))
	if got := verdictOf(d); got.Outcome != "OUTCOME_ALLOW" {
		t.Errorf("after refusals: %+v, want ALLOW", got)
	}
}

func TestSubmitSecondActionDenied(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	w.allowed(task)
	env, _ := w.read(task)
	d := w.submit(proposal(task, refund(1740, subject), env))
	if diff := cmp.Diff(verdict{"OUTCOME_DENY", []string{"ACTION_COUNT_EXCEEDS_GRANT"}}, verdictOf(d)); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	if d.Capability != nil {
		t.Error("DENY issued a capability")
	}
}

func TestSubmitExpiredUnredeemedCapabilityFreesTheCount(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	w.allowed(task)
	w.clock.Advance(5*time.Minute + time.Second)
	env, _ := w.read(task)
	d := w.submit(proposal(task, refund(1740, subject), env))
	if got := verdictOf(d); got.Outcome != "OUTCOME_ALLOW" {
		t.Errorf("after the first capability expired unused: %+v, want ALLOW", got)
	}
}

func TestSubmitContractNotCanonical(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)

	// The task is rebound to a contract that was proposed but never
	// promoted.
	draft := contractItem("CTR-draft", coupledContract(t, task, func(c *contractv1.Contract) { c.Version = "2" }))
	if c := w.propose(draft); c.Class.String() != "CANON_CLASS_PROVISIONAL" {
		t.Fatalf("draft is %s, want PROVISIONAL", c.Class)
	}
	w.bind(task, "CTR-draft")

	d := w.submit(proposal(task, refund(1740, subject), env))
	if diff := cmp.Diff(verdict{"OUTCOME_REVIEW", []string{"CONTRACT_NOT_CANONICAL"}}, verdictOf(d)); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	if d.Capability != nil || d.ApprovalID != "" {
		t.Errorf("non-canonical contract gave capability=%v approval=%q", d.Capability != nil, d.ApprovalID)
	}
	if r := d.Decision.GetReasons()[0]; r.GetAperture() != contractv1.Aperture_APERTURE_LEDGER {
		t.Errorf("aperture = %s, want LEDGER", r.GetAperture())
	}
	// No evidence may be read under it either.
	_, err := w.k.AuthorizeRead(w.ctx, authority.Read{Agent: agentName, TaskID: task, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}})
	wantRefusal(t, err, authority.ErrDenied, "CONTRACT_NOT_CANONICAL")
}

// TestSubmitWithoutEvidence: a proposal that cites no evidence lacks
// evidence; DESIGN.md §1 makes that a REVIEW ("current evidence ... is
// missing"), not a DENY ("outside the designed task").
func TestSubmitWithoutEvidence(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d := w.submit(proposal(task, refund(1740, subject)))
	if d.Capability != nil {
		t.Fatal("a proposal without evidence got a capability")
	}
	if got := verdictOf(d); got.Outcome != "OUTCOME_REVIEW" {
		t.Fatalf("a proposal without evidence is %s %v, want REVIEW", got.Outcome, got.Codes)
	}
	if !slices.Contains(verdictOf(d).Codes, "RECORD_EVIDENCE_MISSING") {
		t.Errorf("reasons = %v, want RECORD_EVIDENCE_MISSING among them", verdictOf(d).Codes)
	}
}

// TestReceiptNamesTheBoundItem: two canon items may hold the same contract
// bytes; a decision receipt names the item the task is bound to, whichever
// of them was compiled first.
func TestReceiptNamesTheBoundItem(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)
	if d := w.submit(proposal(task, refund(1740, subject), env)); d.Capability == nil {
		t.Fatalf("first item: %+v", verdictOf(d))
	}
	twin := "CTR-twin"
	w.propose(contractItem(twin, coupledContract(t, task)))
	w.promote(twin)
	w.bind(task, twin)
	d := w.submit(proposal(task, refund(1740, subject), env))
	var dr receiptv1.DecisionReceipt
	if err := proto.Unmarshal(d.Receipt.GetPayload(), &dr); err != nil {
		t.Fatal(err)
	}
	if dr.GetContractItemId() != twin {
		t.Errorf("decision receipt names %q, want the bound item %q", dr.GetContractItemId(), twin)
	}
}
