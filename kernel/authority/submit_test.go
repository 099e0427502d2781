package authority_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
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
	if d.GetApprovalId() != "" {
		t.Errorf("ApprovalID = %q on ALLOW, want none", d.GetApprovalId())
	}
	if c.GetCapabilityId() == "" || c.GetIdempotencyKey() == "" {
		t.Fatalf("capability lacks id or idempotency key: %v", c)
	}
	// The key is made from the identifier, so that it is as unique: the
	// store keeps no index of keys.
	if id, ok := strings.CutPrefix(c.GetCapabilityId(), "cap-"); !ok || c.GetIdempotencyKey() != "idem-"+id {
		t.Errorf("idempotency key %q is not made from capability id %q", c.GetIdempotencyKey(), c.GetCapabilityId())
	}
	want := &receiptv1.Capability{
		CapabilityId:   c.GetCapabilityId(),
		DecisionId:     d.GetDecisionId(),
		TaskId:         task,
		ContractHash:   item.Item.GetContentHash(),
		Call:           canonicalOf(refund(1740, subject)),
		Destination:    "claimant",
		StateVersion:   version42,
		Holder:         agentName,
		Record:         claimsDB + "/" + claimKey,
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
	if err := (envelope.Keyring{kernelKey: w.keys[kernelKey]}).Open(d.GetDecisionReceipt(), kernelKey, &dr); err != nil {
		t.Fatalf("decision receipt does not verify: %v", err)
	}
	// Another key does not verify it.
	if err := (envelope.Keyring{kernelKey: w.keys[evidenceID]}).Open(d.GetDecisionReceipt(), kernelKey, &dr); err == nil {
		t.Errorf("decision receipt verifies with the evidence adapter's key")
	}
	// The capability and the decision receipt are signed together, as
	// the two leaves of one batch.
	capEnv, drEnv := d.GetCapability(), d.GetDecisionReceipt()
	if capEnv.GetBatch().GetIndex() != 0 || drEnv.GetBatch().GetIndex() != 1 || capEnv.GetBatch().GetSize() != 2 || drEnv.GetBatch().GetSize() != 2 ||
		!bytes.Equal(capEnv.GetSignature(), drEnv.GetSignature()) {
		t.Errorf("capability batch %v and receipt batch %v, want leaves 0 and 1 of one batch of 2 under one signature", capEnv.GetBatch(), drEnv.GetBatch())
	}
	if dr.GetDecisionId() != d.GetDecisionId() || dr.GetTaskId() != task || dr.GetAgent() != agentName {
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
	if last := es[len(es)-1]; last.Kind != "decision" || last.Ref != d.GetDecisionId() {
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
	if d.GetCapability() != nil || d.GetApprovalId() == "" {
		t.Fatalf("REVIEW gave capability=%v approval=%q; want none and an approval", d.GetCapability() != nil, d.GetApprovalId())
	}
	pending, err := allApprovals(w.ctx, w.k, kernelv1.ApprovalState_APPROVAL_STATE_UNSPECIFIED)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].GetApprovalId() != d.GetApprovalId() || pending[0].GetTaskId() != task {
		t.Fatalf("pending approvals = %v, want %s", pending, d.GetApprovalId())
	}

	// A pending approval grants nothing.
	p := proposal(task, over, env)
	p.ApprovalID = d.GetApprovalId()
	_, err = w.k.Submit(w.ctx, p)
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_APPROVED")

	a, err := w.k.DecideApproval(w.ctx, "approver", d.GetApprovalId(), true, "receipt checked")
	if err != nil {
		t.Fatalf("DecideApproval: %v", err)
	}
	if a.GetState() != kernelv1.ApprovalState_APPROVAL_STATE_APPROVED || a.GetDecidedBy() != "approver" {
		t.Fatalf("approval = %v", a)
	}
	// Deciding twice is refused.
	_, err = w.k.DecideApproval(w.ctx, "approver", d.GetApprovalId(), false, "")
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_PENDING")

	// The approval is bound to exactly this effect.
	other := proposal(task, refund(7500, subject), env)
	other.ApprovalID = d.GetApprovalId()
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
	if got.GetCapability() == nil {
		t.Fatal("ALLOW without a capability")
	}
	consumed, err := allApprovals(w.ctx, w.k, kernelv1.ApprovalState_APPROVAL_STATE_CONSUMED)
	if err != nil {
		t.Fatal(err)
	}
	if len(consumed) != 1 || consumed[0].GetApprovalId() != d.GetApprovalId() {
		t.Fatalf("consumed approvals = %v, want %s", consumed, d.GetApprovalId())
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
	if _, err := w.k.DecideApproval(w.ctx, "approver", d.GetApprovalId(), false, "no receipt"); err != nil {
		t.Fatal(err)
	}
	p := proposal(task, refund(7400, subject), env)
	p.ApprovalID = d.GetApprovalId()
	before := len(w.entries())
	_, err := w.k.Submit(w.ctx, p)
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_APPROVED")
	if after := len(w.entries()); after != before {
		t.Errorf("a refused proposal journaled %d entries", after-before)
	}
}

func TestSubmitDecisions(t *testing.T) {
	email := emailCall("someone@example.com")
	tests := []struct {
		name     string
		action   *contractv1.ToolCall
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
			want:   verdict{"OUTCOME_DENY", []string{"TOOL_OUTSIDE_GRANT", "DESTINATION_OUTSIDE_GRANT"}},
		},
		{
			name:   "above the hard limit",
			action: refund(10001, subject),
			want:   verdict{"OUTCOME_DENY", []string{"AMOUNT_EXCEEDS_HARD_LIMIT", "CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}},
		},
		{
			name:   "other currency",
			action: refundIn("EUR", 100),
			want:   verdict{"OUTCOME_DENY", []string{"CURRENCY_OUTSIDE_GRANT"}},
		},
		{
			name:   "another claim than the bound record",
			action: refundOf("C-2002", 100, subject),
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
			// The kernel stops watching a record 24 hours after its last
			// read: a change after that would go unseen.
			name:   "evidence older than the watch window, though the contract allows a week",
			action: refund(1740, subject),
			edit:   func(c *contractv1.Contract) { c.Evidence.MaxAgeSeconds = 7 * 86400 },
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
			if (d.GetCapability() != nil) != (tt.want.Outcome == "OUTCOME_ALLOW") {
				t.Errorf("capability issued = %v for %s", d.GetCapability() != nil, tt.want.Outcome)
			}
			if got := d.GetApprovalId() != ""; got != tt.approval {
				t.Errorf("approval created = %v, want %v", got, tt.approval)
			}
			// Every decision is journaled, an ALLOW with its capability.
			want := []string{"decision"}
			if d.GetCapability() != nil {
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

	money := refundIn
	// The recorded envelope with its signature stripped, and its payload
	// re-signed by a key the kernel does not know: not what was recorded.
	stripped := proto.CloneOf(env)
	stripped.Signature = nil
	var payload receiptv1.EvidenceReceipt
	if err := proto.Unmarshal(env.GetPayload(), &payload); err != nil {
		t.Fatal(err)
	}
	strangerSigned := w.sign(w.stranger, &payload)
	strangerSigned.KeyId = evidenceID
	tests := []struct {
		name   string
		p      authority.Proposal
		kind   error
		reason string
	}{
		{"zero amount", proposal(task, money("GBP", 0), env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"negative amount", proposal(task, money("GBP", -1740), env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"unknown currency", proposal(task, money("XXX", 1740), env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"lower-case currency", proposal(task, money("gbp", 1740), env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"no amount", proposal(task, &contractv1.ToolCall{Tool: "refund", ArgumentsJson: `{"claim_id":"C-1001","payee_id":"employee-7"}`}, env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"empty claim", proposal(task, refundOf("", 1, subject), env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"empty payee", proposal(task, refund(1, ""), env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"an argument the tool does not declare", proposal(task, &contractv1.ToolCall{Tool: "refund", ArgumentsJson: `{"claim_id":"C-1001","payee_id":"employee-7","amount":{"currency_code":"GBP","minor_units":1},"memo":"pay twice"}`}, env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"a duplicate argument", proposal(task, &contractv1.ToolCall{Tool: "refund", ArgumentsJson: `{"claim_id":"C-1001","claim_id":"C-2002","payee_id":"employee-7","amount":{"currency_code":"GBP","minor_units":1}}`}, env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"arguments that are not an object", proposal(task, &contractv1.ToolCall{Tool: "refund", ArgumentsJson: `[1]`}, env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"empty task", proposal("", refund(1740, subject), env), authority.ErrInvalid, "INVALID_REQUEST"},
		{"empty purpose", authority.Proposal{Agent: agentName, TaskID: task, Call: refund(1740, subject), Evidence: []*receiptv1.Envelope{env}}, authority.ErrInvalid, "INVALID_REQUEST"},
		{"missing call", proposal(task, nil, env), authority.ErrInvalid, "INVALID_REQUEST"},
		{"empty call", proposal(task, &contractv1.ToolCall{}, env), authority.ErrInvalid, "ARGUMENTS_INVALID"},
		{"too much evidence", proposal(task, refund(1740, subject), slices.Repeat([]*receiptv1.Envelope{env}, 17)...), authority.ErrInvalid, "INVALID_REQUEST"},
		{"recorded evidence with its signature stripped", proposal(task, refund(1740, subject), stripped), authority.ErrInvalid, "EVIDENCE_INVALID"},
		{"recorded evidence re-signed with an unknown key", proposal(task, refund(1740, subject), strangerSigned), authority.ErrInvalid, "EVIDENCE_INVALID"},
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
	if d.GetCapability() != nil {
		t.Error("DENY issued a capability")
	}
}

// TestSubmitCountsUsageAfterARestart: the task's one action, used before
// the kernel restarts, is still used after it: the restarted kernel counts
// the task's usage from its capabilities before it decides.
func TestSubmitCountsUsageAfterARestart(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	w.allowed(task)
	if err := w.st.Close(); err != nil {
		t.Fatal(err)
	}
	w.st = w.openStore()
	w.k = w.newKernel(w.st)
	env, _ := w.read(task)
	d := w.submit(proposal(task, refund(1740, subject), env))
	if diff := cmp.Diff(verdict{"OUTCOME_DENY", []string{"ACTION_COUNT_EXCEEDS_GRANT"}}, verdictOf(d)); diff != "" || d.GetCapability() != nil {
		t.Errorf("verdict after a restart (-want +got):\n%s", diff)
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
	if d.GetCapability() != nil || d.GetApprovalId() != "" {
		t.Errorf("non-canonical contract gave capability=%v approval=%q", d.GetCapability() != nil, d.GetApprovalId())
	}
	if r := d.GetDecision().GetReasons()[0]; r.GetAperture() != contractv1.Aperture_APERTURE_LEDGER {
		t.Errorf("aperture = %s, want LEDGER", r.GetAperture())
	}
	// No evidence may be read under it either.
	_, err := w.k.AuthorizeRead(w.ctx, authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}})
	wantRefusal(t, err, authority.ErrDenied, "CONTRACT_NOT_CANONICAL")
}

// TestSubmitWithoutEvidence: a proposal that cites no evidence lacks
// evidence; DESIGN.md §1 makes that a REVIEW ("current evidence ... is
// missing"), not a DENY ("outside the designed task").
func TestSubmitWithoutEvidence(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d := w.submit(proposal(task, refund(1740, subject)))
	if d.GetCapability() != nil {
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
	if d := w.submit(proposal(task, refund(1740, subject), env)); d.GetCapability() == nil {
		t.Fatalf("first item: %+v", verdictOf(d))
	}
	twin := "CTR-twin"
	w.propose(contractItem(twin, coupledContract(t, task)))
	w.promote(twin)
	w.bind(task, twin)
	d := w.submit(proposal(task, refund(1740, subject), env))
	var dr receiptv1.DecisionReceipt
	if err := proto.Unmarshal(d.GetDecisionReceipt().GetPayload(), &dr); err != nil {
		t.Fatal(err)
	}
	if dr.GetContractItemId() != twin {
		t.Errorf("decision receipt names %q, want the bound item %q", dr.GetContractItemId(), twin)
	}
}

// TestTasksShareCompiledTools: tasks bound to contracts of their own, made
// from one template, decide with one compiled tool between them; a task
// whose compiled contract the kernel has forgotten (it keeps the last
// maxCompiled) loads it from the journal and decides as before.
func TestTasksShareCompiledTools(t *testing.T) {
	w := newWorld(t)
	tasks := []string{task, "task-2"}
	for _, id := range tasks {
		w.canonicalTask(id, func(c *contractv1.Contract) { c.Action.MaxActions = 3 })
		env, _ := w.read(id)
		if d := w.submit(proposal(id, refund(1740, subject), env)); d.GetCapability() == nil {
			t.Fatalf("%s: %+v", id, verdictOf(d))
		}
	}
	first := authority.CompiledTool(w.k, "CTR-"+tasks[0], "refund")
	if first == nil || first != authority.CompiledTool(w.k, "CTR-"+tasks[1], "refund") {
		t.Fatal("two tasks' contracts of one template hold their refund tool compiled twice")
	}
	authority.ForgetCompiled(w.k)
	if authority.CompiledTool(w.k, "CTR-"+tasks[0], "refund") != nil {
		t.Fatal("the kernel still keeps a contract it forgot")
	}
	env, _ := w.read(task)
	if d := w.submit(proposal(task, refund(1740, subject), env)); d.GetCapability() == nil {
		t.Fatalf("after the contract was forgotten: %+v", verdictOf(d))
	}
	if authority.CompiledTool(w.k, "CTR-"+task, "refund") != first {
		t.Error("the contract compiled again holds a new refund tool, not the one shared before")
	}
	if d := w.submit(proposal(task, refund(1740, "someone-else"), env)); d.GetCapability() != nil {
		t.Errorf("a refund to another payee was allowed after the contract was compiled again: %+v", verdictOf(d))
	}
}

// firstAnswer is a world whose task grants maxActions refunds, a proposal
// with request id "req-1", and the first answer to it: a capability.
func firstAnswer(t *testing.T, maxActions int32) (*world, authority.Proposal, *authority.Decided) {
	t.Helper()
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) { c.Action.MaxActions = maxActions })
	env, _ := w.read(task)
	p := proposal(task, refund(1740, subject), env)
	p.RequestID = "req-1"
	first := w.submit(p)
	if first.GetCapability() == nil || first.GetRepeated() || first.GetIdempotencyKey() == "" || first.GetCapabilityExpiresAt() == nil {
		t.Fatalf("first = %+v", first)
	}
	return w, p, first
}

// TestSubmitRequestIDIsIdempotent: a reply lost after the commit is asked
// for again with the same request id and the same answer comes back — no
// second decision, no second capability; the id cannot be reused for
// another call.
func TestSubmitRequestIDIsIdempotent(t *testing.T) {
	w, p, first := firstAnswer(t, 3)
	env := p.Evidence[0]
	before := len(w.entries())
	again := w.submit(p)
	if !again.GetRepeated() || again.GetDecisionId() != first.GetDecisionId() ||
		!proto.Equal(again.GetCapability(), first.GetCapability()) || again.GetIdempotencyKey() != first.GetIdempotencyKey() {
		t.Fatalf("repeat = %+v, want the first answer", again)
	}
	if after := len(w.entries()); after != before {
		t.Errorf("the repeat journaled %d entries", after-before)
	}
	list, err := allCommitments(w.ctx, w.k, task)
	if err != nil || len(list) != 1 {
		t.Fatalf("commitments = %v, %v; want one", list, err)
	}
	other := proposal(task, refund(1800, subject), env)
	other.RequestID = "req-1"
	_, err = w.k.Submit(w.ctx, other)
	wantRefusal(t, err, authority.ErrInvalid, "REQUEST_ID_REUSED")
	// Without a request id every submission is a new decision.
	q := proposal(task, refund(1740, subject), env)
	if a, b := w.submit(q), w.submit(q); a.GetDecisionId() == b.GetDecisionId() {
		t.Error("two submissions without a request id share a decision")
	}
}

// TestRepeatAnsweredWhateverDecidingAgainSays: a repeat of a request id
// gets the first answer, and journals nothing, even when deciding the call
// again would now refuse it (the task's actions are used up), send it for
// review (the contract has expired) or fail before any decision (the task is
// bound to another agent).
func TestRepeatAnsweredWhateverDecidingAgainSays(t *testing.T) {
	w, p, first := firstAnswer(t, 1)
	env := p.Evidence[0]
	for _, tt := range []struct {
		then string
		now  func() // makes a new proposal of the same call fare otherwise
		want func(*authority.Decided, error) bool
	}{
		{"with the task's actions used up", func() {}, func(d *authority.Decided, err error) bool {
			return err == nil && d.GetDecision().GetOutcome() == contractv1.Outcome_OUTCOME_DENY
		}},
		{"after the contract expired", func() { w.clock.Advance(49 * time.Hour) }, func(d *authority.Decided, err error) bool {
			return err == nil && d.GetDecision().GetOutcome() == contractv1.Outcome_OUTCOME_REVIEW
		}},
		{"with the task bound to another agent", func() {
			if _, err := w.k.BindTask(w.ctx, "governance", task, "CTR-"+task, "another-agent"); err != nil {
				t.Fatal(err)
			}
		}, func(_ *authority.Decided, err error) bool { return err != nil }},
	} {
		tt.now()
		before := len(w.entries())
		again, err := w.k.Submit(w.ctx, p)
		if err != nil || !again.GetRepeated() || again.GetDecisionId() != first.GetDecisionId() ||
			!proto.Equal(again.GetCapability(), first.GetCapability()) {
			t.Errorf("repeat %s = %+v, %v; want the first answer", tt.then, again, err)
		}
		other := proposal(task, refund(1800, subject), env)
		other.RequestID = p.RequestID
		_, err = w.k.Submit(w.ctx, other)
		wantRefusal(t, err, authority.ErrInvalid, "REQUEST_ID_REUSED")
		if after := len(w.entries()); after != before {
			t.Errorf("the repeat %s journaled %d entries", tt.then, after-before)
		}
		if d, err := w.k.Submit(w.ctx, proposal(task, refund(1740, subject), env)); !tt.want(d, err) {
			t.Errorf("a new proposal %s = %v, %v; not what the case is about", tt.then, d.GetDecision(), err)
		}
	}
}

// TestApprovalsPage: approvals are listed a page of one state at a time,
// in the order they were asked for; a page needs a limit.
func TestApprovalsPage(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)
	var asked []string
	for _, minor := range []int64{7400, 7300, 7200} { // above the GBP 50.00 approval threshold
		d := w.submit(proposal(task, refund(minor, subject), env))
		if d.GetApprovalId() == "" {
			t.Fatalf("refund of %d: no approval asked for", minor)
		}
		asked = append(asked, d.GetApprovalId())
	}
	if _, err := w.k.DecideApproval(w.ctx, "approver", asked[1], true, ""); err != nil {
		t.Fatal(err)
	}
	ids := func(state kernelv1.ApprovalState) []string {
		as, err := allApprovals(w.ctx, w.k, state)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, a := range as {
			out = append(out, a.GetApprovalId())
		}
		return out
	}
	if diff := cmp.Diff([]string{asked[0], asked[2]}, ids(kernelv1.ApprovalState_APPROVAL_STATE_UNSPECIFIED)); diff != "" {
		t.Errorf("pending approvals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{asked[1]}, ids(kernelv1.ApprovalState_APPROVAL_STATE_APPROVED)); diff != "" {
		t.Errorf("approved approvals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{}, ids(kernelv1.ApprovalState_APPROVAL_STATE_REJECTED)); diff != "" {
		t.Errorf("rejected approvals (-want +got):\n%s", diff)
	}
	page, next, err := w.k.Approvals(w.ctx, authority.ApprovalQuery{Limit: 1})
	if err != nil || len(page) != 1 || page[0].GetApprovalId() != asked[0] || next != asked[0] {
		t.Errorf("first page of one = %v, next %q, %v; want %s and to go on after it", page, next, err, asked[0])
	}
	_, _, err = w.k.Approvals(w.ctx, authority.ApprovalQuery{})
	wantRefusal(t, err, authority.ErrInvalid, "INVALID_REQUEST")
}
