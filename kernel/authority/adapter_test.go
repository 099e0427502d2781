package authority_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestAuthorizeRead(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	tests := []struct {
		name   string
		read   authority.Read
		kind   error
		reason string
	}{
		{"granted", authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id", "receipt_total"}}, nil, ""},
		{"field outside grant", authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id", "salary", "medical_notes"}}, authority.ErrDenied, "FIELDS_OUTSIDE_GRANT"},
		{"source outside grant", authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: "hr_db", RecordKey: claimKey, Fields: []string{"claim_id"}}, authority.ErrDenied, "SOURCE_OUTSIDE_GRANT"},
		{"unbound task", authority.Read{Agent: agentName, TaskID: "nope", Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}}, authority.ErrStale, "TASK_NOT_BOUND"},
		{"no fields", authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey}, authority.ErrInvalid, "INVALID_REQUEST"},
		{"no task", authority.Read{Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}}, authority.ErrInvalid, "INVALID_REQUEST"},
		{"no record", authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, Fields: []string{"claim_id"}}, authority.ErrInvalid, "INVALID_REQUEST"},
		{"another record of the bound source", authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: "C-1002", Fields: []string{"claim_id"}}, authority.ErrDenied, "RECORD_OUTSIDE_BINDING"},
		{"another purpose", authority.Read{Agent: agentName, TaskID: task, Purpose: "marketing", Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}}, authority.ErrDenied, "PURPOSE_MISMATCH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := w.k.AuthorizeRead(w.ctx, tt.read)
			if tt.kind == nil {
				if err != nil || g.GetProvenance() != contractv1.Provenance_PROVENANCE_TRUSTED || g.GetBoundStateVersion() != version42 {
					t.Fatalf("AuthorizeRead = %v, %v; want TRUSTED bound to %s", g, err, version42)
				}
				return
			}
			wantRefusal(t, err, tt.kind, tt.reason)
		})
	}
	// The refusal names the fields outside the grant, sorted.
	_, err := w.k.AuthorizeRead(w.ctx, authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"salary", "claim_id", "bank_details"}})
	if err == nil || !strings.Contains(err.Error(), "[bank_details salary]") {
		t.Errorf("refusal %v does not name [bank_details salary]", err)
	}
	// The instruction-bearing source is readable, with its provenance.
	g, err := w.k.AuthorizeRead(w.ctx, authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: "receipt_upload", RecordKey: "R-1", Fields: []string{"receipt_total"}})
	if err != nil || g.GetProvenance() != contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING {
		t.Errorf("receipt_upload = %v, %v; want INSTRUCTION_BEARING", g, err)
	}
	// After expiry nothing can be read.
	w.clock.Advance(49 * time.Hour)
	_, err = w.k.AuthorizeRead(w.ctx, tests[0].read)
	wantRefusal(t, err, authority.ErrDenied, "CONTRACT_EXPIRED")
}

func TestRecordEvidence(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	tests := []struct {
		name   string
		signer func() *receiptv1.Envelope
		caller string
		kind   error
		reason string
	}{
		{"other subject", func() *receiptv1.Envelope {
			return w.sign(w.evidence, w.evidenceReceipt(task, func(r *receiptv1.EvidenceReceipt) { r.Subject = "employee-9" }))
		}, evidenceID, authority.ErrDenied, "SUBJECT_OUTSIDE_GRANT"},
		{"field outside grant", func() *receiptv1.Envelope {
			return w.sign(w.evidence, w.evidenceReceipt(task, func(r *receiptv1.EvidenceReceipt) { r.Fields = []string{"salary"} }))
		}, evidenceID, authority.ErrDenied, "FIELDS_OUTSIDE_GRANT"},
		{"no state version", func() *receiptv1.Envelope {
			return w.sign(w.evidence, w.evidenceReceipt(task, func(r *receiptv1.EvidenceReceipt) { r.StateVersion = "" }))
		}, evidenceID, authority.ErrInvalid, "RECEIPT_INVALID"},
		{"no read time", func() *receiptv1.Envelope {
			return w.sign(w.evidence, w.evidenceReceipt(task, func(r *receiptv1.EvidenceReceipt) { r.ReadAt = nil }))
		}, evidenceID, authority.ErrInvalid, "RECEIPT_INVALID"},
		{"signed by the action adapter", func() *receiptv1.Envelope {
			return w.sign(w.action, w.evidenceReceipt(task))
		}, actionID, authority.ErrInvalid, "RECEIPT_INVALID"},
		{"caller is not the signer", func() *receiptv1.Envelope {
			return w.sign(w.evidence, w.evidenceReceipt(task))
		}, "someone-else", authority.ErrInvalid, "RECEIPT_INVALID"},
		{"unbound task", func() *receiptv1.Envelope {
			return w.sign(w.evidence, w.evidenceReceipt("nope"))
		}, evidenceID, authority.ErrStale, "TASK_NOT_BOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.entries())
			_, err := w.k.RecordEvidence(w.ctx, tt.caller, tt.signer())
			wantRefusal(t, err, tt.kind, tt.reason)
			if after := len(w.entries()); after != before {
				t.Errorf("a refused receipt journaled %d entries", after-before)
			}
		})
	}

	// The same receipt twice is a no-op; other bytes under its id are
	// refused.
	r := w.evidenceReceipt(task)
	env := w.sign(w.evidence, r)
	if _, err := w.k.RecordEvidence(w.ctx, evidenceID, env); err != nil {
		t.Fatal(err)
	}
	before := len(w.entries())
	if rec, err := w.k.RecordEvidence(w.ctx, evidenceID, env); err != nil || rec.StateChanged {
		t.Errorf("recording again = %+v, %v; want a no-op", rec, err)
	}
	if after := len(w.entries()); after != before {
		t.Errorf("recording again journaled %d entries", after-before)
	}
	r.Fields = []string{"claim_id"}
	_, err := w.k.RecordEvidence(w.ctx, evidenceID, w.sign(w.evidence, r))
	wantRefusal(t, err, authority.ErrExists, "RECEIPT_CONFLICT")
}

// TestStateChangeCancelsReach is coupling rule 3: a new state version of the
// record revokes the task's outstanding capability and cancels its open
// approvals.
func TestStateChangeCancelsReach(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	old, _ := w.read(task)
	review := w.submit(proposal(task, refund(7400, subject), old))
	if review.GetApprovalId() == "" {
		t.Fatalf("no approval asked: %+v", verdictOf(review))
	}
	allow := w.submit(proposal(task, refund(1740, subject), old))
	if allow.GetCapability() == nil {
		t.Fatalf("no capability: %+v", verdictOf(allow))
	}
	c := w.openCapability(allow.GetCapability())

	// The same version again changes nothing.
	if _, rec := w.read(task); rec.StateChanged || len(rec.Revoked) != 0 {
		t.Fatalf("same version: %+v, want no change", rec)
	}
	before := len(w.entries())
	rec := w.changed(task, version43)
	if diff := cmp.Diff(authority.Recorded{StateChanged: true, Revoked: []string{c.GetCapabilityId()}, LogIndex: uint64(before)}, rec); diff != "" {
		t.Errorf("Recorded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"evidence", "revoke", "approval.cancel"}, kinds(w.entries()[before:])); diff != "" {
		t.Errorf("journaled (-want +got):\n%s", diff)
	}

	_, err := w.k.Redeem(w.ctx, actionID, allow.GetCapability(), c.GetIdempotencyKey(), agentName)
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_REVOKED")

	cancelled, err := allApprovals(w.ctx, w.k, kernelv1.ApprovalState_APPROVAL_STATE_CANCELLED)
	if err != nil {
		t.Fatal(err)
	}
	if len(cancelled) != 1 || cancelled[0].GetApprovalId() != review.GetApprovalId() || !strings.Contains(cancelled[0].GetNote(), version43) {
		t.Errorf("cancelled approvals = %v, want %s naming %s", cancelled, review.GetApprovalId(), version43)
	}
	// The cancelled approval cannot be decided.
	_, err = w.k.DecideApproval(w.ctx, "approver", review.GetApprovalId(), true, "")
	wantRefusal(t, err, authority.ErrStale, "APPROVAL_NOT_PENDING")

	// A proposal citing the evidence read at v42 is stale.
	d := w.submit(proposal(task, refund(1740, subject), old))
	if diff := cmp.Diff(verdict{"OUTCOME_REVIEW", []string{"STATE_VERSION_CHANGED"}}, verdictOf(d)); diff != "" {
		t.Errorf("old evidence (-want +got):\n%s", diff)
	}
	if d.GetCapability() != nil || d.GetApprovalId() != "" {
		t.Errorf("stale evidence gave capability=%v approval=%q", d.GetCapability() != nil, d.GetApprovalId())
	}

	commitments, err := allCommitments(w.ctx, w.k, task)
	if err != nil {
		t.Fatal(err)
	}
	if len(commitments) != 1 || commitments[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED ||
		!strings.Contains(commitments[0].GetNote(), "claims-v42 → claims-v43") {
		t.Errorf("commitments = %v, want one REVOKED naming the change", commitments)
	}
}

// TestStateChangeBlocksRedemption: a redeemed capability is past
// revocation (the effect may be under way), so a later state change leaves
// its retries alone.
func TestStateChangeBlocksRedemption(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task)
	w.redeemed(d.GetCapability(), c)
	rec := w.changed(task, version43)
	if !rec.StateChanged || len(rec.Revoked) != 0 {
		t.Errorf("Recorded = %+v, want a state change revoking nothing already redeemed", rec)
	}
	// A retry of the redeemed capability is still a retry.
	r, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
	if err != nil || r.First {
		t.Errorf("retry after state change = %+v, %v; want a retry", r, err)
	}
}

func TestRedeem(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task)

	// Refusals before the first redemption change nothing.
	forgedEnv := w.sign(w.kernel, &receiptv1.Capability{
		CapabilityId: "cap-never-issued", TaskId: task, Call: c.GetCall(), IdempotencyKey: "idem-x",
		ExpiresAt: timestamppb.New(start.Add(time.Hour)),
	})
	byAdapter := w.sign(w.action, c)
	refusals := []struct {
		name   string
		env    *receiptv1.Envelope
		holder string
		key    string
		kind   error
		reason string
	}{
		{"flipped byte", flip(d.GetCapability()), agentName, c.GetIdempotencyKey(), authority.ErrDenied, "CAPABILITY_INVALID"},
		{"signed by an adapter", byAdapter, agentName, c.GetIdempotencyKey(), authority.ErrDenied, "CAPABILITY_INVALID"},
		{"no capability", nil, agentName, c.GetIdempotencyKey(), authority.ErrDenied, "CAPABILITY_INVALID"},
		{"presented by another agent", d.GetCapability(), "agent-b", c.GetIdempotencyKey(), authority.ErrDenied, "CAPABILITY_NOT_HOLDER"},
		{"different idempotency key", d.GetCapability(), agentName, "idem-other", authority.ErrInvalid, "IDEMPOTENCY_KEY_MISMATCH"},
		{"never issued", forgedEnv, "", "idem-x", authority.ErrNotFound, "CAPABILITY_UNKNOWN"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.entries())
			_, err := w.k.Redeem(w.ctx, actionID, tt.env, tt.key, tt.holder)
			wantRefusal(t, err, tt.kind, tt.reason)
			if after := len(w.entries()); after != before {
				t.Errorf("a refused redemption journaled %d entries", after-before)
			}
		})
	}

	before := len(w.entries())
	first, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
	if err != nil || !first.First {
		t.Fatalf("first Redeem = %+v, %v", first, err)
	}
	if first.Commitment.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED || first.Commitment.GetCapabilityId() != c.GetCapabilityId() {
		t.Errorf("commitment = %v, want REDEEMED", first.Commitment)
	}
	if diff := cmp.Diff([]string{"redeem"}, kinds(w.entries()[before:])); diff != "" {
		t.Errorf("journaled (-want +got):\n%s", diff)
	}
	again, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
	if err != nil || again.First {
		t.Fatalf("second Redeem = %+v, %v; want a retry", again, err)
	}

	if _, _, err := w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-1")); err != nil {
		t.Fatalf("RecordEffect: %v", err)
	}
	// Still open: a retry is allowed.
	if r, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName); err != nil || r.First {
		t.Fatalf("Redeem after effect = %+v, %v; want a retry", r, err)
	}
	if _, _, err := w.k.RecordReadback(w.ctx, verifierID, w.readback(c, "rb-1", "eff-1", receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED)); err != nil {
		t.Fatalf("RecordReadback: %v", err)
	}
	_, err = w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_USED")
}

func TestRedeemExpired(t *testing.T) {
	tests := []struct {
		name    string
		advance time.Duration
		ok      bool
	}{
		{"at expiry", 5 * time.Minute, true},
		{"just past the TTL", 5*time.Minute + time.Microsecond, false},
		{"an hour later", time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.canonicalTask(task)
			d, c := w.allowed(task)
			w.clock.Advance(tt.advance)
			r, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
			if tt.ok {
				if err != nil || !r.First {
					t.Fatalf("Redeem = %+v, %v; want first", r, err)
				}
				return
			}
			wantRefusal(t, err, authority.ErrStale, "CAPABILITY_EXPIRED")
		})
	}
}

// TestCapabilityExpiresWithContract: a capability never outlives the
// contract it was issued under.
func TestCapabilityExpiresWithContract(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) { c.Binding.ValidUntil = timestampAt(start.Add(time.Minute)) })
	_, c := w.allowed(task)
	if got, want := c.GetExpiresAt().AsTime(), start.Add(time.Minute); !got.Equal(want) {
		t.Errorf("expires_at = %s, want the contract's %s", got, want)
	}
}

// receiptCase is a receipt an adapter records, and the refusal it gets.
type receiptCase struct {
	name   string
	caller string
	env    *receiptv1.Envelope
	kind   error
	reason string
}

func TestRecordEffect(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task)

	// Before redemption.
	_, _, err := w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-1"))
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_NOT_REDEEMED")
	w.redeemed(d.GetCapability(), c)

	wrongSigner := w.sign(w.evidence, &receiptv1.EffectReceipt{ReceiptId: "eff-1", CapabilityId: c.GetCapabilityId(), TaskId: task, IdempotencyKey: c.GetIdempotencyKey()})
	otherKey := w.sign(w.action, &receiptv1.EffectReceipt{ReceiptId: "eff-1", CapabilityId: c.GetCapabilityId(), TaskId: task, IdempotencyKey: "idem-other"})
	unknownCap := w.sign(w.action, &receiptv1.EffectReceipt{ReceiptId: "eff-1", CapabilityId: "cap-nope", TaskId: task})
	for _, tt := range []receiptCase{
		{"signed by the evidence adapter", actionID, wrongSigner, authority.ErrInvalid, "RECEIPT_INVALID"},
		{"caller is not the signer", evidenceID, w.effect(c, "eff-1"), authority.ErrInvalid, "RECEIPT_INVALID"},
		{"tampered", actionID, flip(w.effect(c, "eff-1")), authority.ErrInvalid, "RECEIPT_INVALID"},
		{"other idempotency key", actionID, otherKey, authority.ErrInvalid, "RECEIPT_MISMATCH"},
		{"no receipt id", actionID, w.effect(c, ""), authority.ErrInvalid, "RECEIPT_INVALID"},
		{"unknown capability", actionID, unknownCap, authority.ErrNotFound, "CAPABILITY_UNKNOWN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := w.k.RecordEffect(w.ctx, tt.caller, tt.env)
			wantRefusal(t, err, tt.kind, tt.reason)
		})
	}

	eff := w.effect(c, "eff-1")
	got, _, err := w.k.RecordEffect(w.ctx, actionID, eff)
	if err != nil {
		t.Fatalf("RecordEffect: %v", err)
	}
	if got.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED || got.GetEffectReceiptId() != "eff-1" {
		t.Errorf("commitment = %v, want EFFECTED by eff-1", got)
	}
	before := len(w.entries())
	if _, _, err := w.k.RecordEffect(w.ctx, actionID, eff); err != nil {
		t.Errorf("recording the same effect again: %v", err)
	}
	if after := len(w.entries()); after != before {
		t.Errorf("recording the same effect again journaled %d entries", after-before)
	}
	_, _, err = w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-2"))
	wantRefusal(t, err, authority.ErrExists, "EFFECT_CONFLICT")
}

// TestRecordEffectOtherAction: the effect receipt must report the effect
// the capability bound; the kernel should not close a commitment on a
// receipt for another amount or payee.
func TestRecordEffectOtherAction(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task)
	w.redeemed(d.GetCapability(), c)
	env := w.sign(w.action, &receiptv1.EffectReceipt{
		ReceiptId: "eff-1", CapabilityId: c.GetCapabilityId(), TaskId: task, IdempotencyKey: c.GetIdempotencyKey(),
		Call: refund(9999, "employee-9"), Destination: "other_customer", Issuer: actionID,
	})
	_, _, err := w.k.RecordEffect(w.ctx, actionID, env)
	wantRefusal(t, err, authority.ErrInvalid, "RECEIPT_MISMATCH")
}

// TestRecordRefusal: a redeemed capability whose target refused its effect
// closes as REFUSED, once, with the target's answer; it is not redeemed
// again, takes no effect, and stops counting against the task's one
// action, so that the agent may propose the effect again.
func TestRecordRefusal(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) { c.Action.MaxActions = 1 })
	d, c := w.allowed(task)
	env, _ := w.read(task)
	if got := verdictOf(w.submit(proposal(task, refund(1740, subject), env))); got.Outcome == "OUTCOME_ALLOW" {
		t.Fatalf("a second refund while the first is outstanding = %+v, want it refused", got)
	}

	_, _, err := w.k.RecordRefusal(w.ctx, actionID, w.refusal(c, "eff-1", "402 Payment Required"))
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_NOT_REDEEMED")
	w.redeemed(d.GetCapability(), c)
	for _, tt := range []receiptCase{
		{"signed by the evidence adapter", actionID, w.sign(w.evidence, &receiptv1.RefusalReceipt{ReceiptId: "eff-1", CapabilityId: c.GetCapabilityId()}), authority.ErrInvalid, "RECEIPT_INVALID"},
		{"an effect receipt", actionID, w.effect(c, "eff-1"), authority.ErrInvalid, "RECEIPT_INVALID"},
		{"caller is not the signer", evidenceID, w.refusal(c, "eff-1", "no"), authority.ErrInvalid, "RECEIPT_INVALID"},
		{"no receipt id", actionID, w.refusal(c, "", "no"), authority.ErrInvalid, "RECEIPT_INVALID"},
		{"another call", actionID, w.sign(w.action, &receiptv1.RefusalReceipt{ReceiptId: "eff-1", CapabilityId: c.GetCapabilityId(),
			TaskId: task, IdempotencyKey: c.GetIdempotencyKey(), Call: refund(9999, subject)}), authority.ErrInvalid, "RECEIPT_MISMATCH"},
		{"unknown capability", actionID, w.sign(w.action, &receiptv1.RefusalReceipt{ReceiptId: "eff-1", CapabilityId: "cap-nope"}), authority.ErrNotFound, "CAPABILITY_UNKNOWN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := w.k.RecordRefusal(w.ctx, tt.caller, tt.env)
			wantRefusal(t, err, tt.kind, tt.reason)
		})
	}

	refused := w.refusal(c, "eff-1", "https://rail.example/pay answered 402 Payment Required")
	got, index, err := w.k.RecordRefusal(w.ctx, actionID, refused)
	if err != nil {
		t.Fatalf("RecordRefusal: %v", err)
	}
	if got.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REFUSED || got.GetEffectReceiptId() != "eff-1" ||
		got.GetNote() != "refused by the target: https://rail.example/pay answered 402 Payment Required" {
		t.Errorf("commitment = %v, want REFUSED by eff-1 with the target's answer", got)
	}
	entries := w.entries()
	if last := entries[len(entries)-1]; last.Kind != "refusal" || last.Ref != "eff-1" || uint64(last.Seq-1) != index {
		t.Errorf("last journal entry %s %s at %d, want the refusal eff-1 at leaf %d", last.Kind, last.Ref, last.Seq, index)
	}
	if again, againIndex, err := w.k.RecordRefusal(w.ctx, actionID, refused); err != nil || againIndex != index || again.GetStatus() != got.GetStatus() {
		t.Errorf("recording the same refusal again = %v at %d, %v; want the same answer", again, againIndex, err)
	}
	if n := len(w.entries()); n != len(entries) {
		t.Errorf("recording the same refusal again journaled %d entries", n-len(entries))
	}
	_, _, err = w.k.RecordRefusal(w.ctx, actionID, w.refusal(c, "eff-2", "no"))
	wantRefusal(t, err, authority.ErrExists, "EFFECT_CONFLICT")
	_, err = w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_CLOSED")
	_, _, err = w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-1"))
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_CLOSED")

	view, err := w.k.SelfView(w.ctx, agentName, task, []string{"commitments", "uncertainty"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(view.GetUncertainty(), func(u string) bool { return strings.Contains(u, "was not carried out") }) {
		t.Errorf("self-view uncertainty %q does not say the commitment was not carried out", view.GetUncertainty())
	}
	// Nothing happened under it: the task's one action is free again.
	if again, _ := w.allowed(task); again.GetCapability() == nil {
		t.Errorf("a refund proposed again after the refusal issued no capability")
	}
}

func TestRecordReadback(t *testing.T) {
	tests := []struct {
		name   string
		status receiptv1.ReadbackStatus
		want   agentv1.CommitmentStatus
	}{
		{"verified", receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED, agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED},
		{"mismatch", receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH, agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.canonicalTask(task)
			d, c := w.allowed(task)
			w.redeemed(d.GetCapability(), c)

			// Before the effect.
			_, _, err := w.k.RecordReadback(w.ctx, verifierID, w.readback(c, "rb-1", "eff-1", tt.status))
			wantRefusal(t, err, authority.ErrStale, "COMMITMENT_NOT_EFFECTED")
			if _, _, err := w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-1")); err != nil {
				t.Fatal(err)
			}
			for _, r := range []struct {
				name   string
				caller string
				env    *receiptv1.Envelope
				kind   error
				reason string
			}{
				{"no status", verifierID, w.readback(c, "rb-1", "eff-1", receiptv1.ReadbackStatus_READBACK_STATUS_UNSPECIFIED), authority.ErrInvalid, "RECEIPT_INVALID"},
				{"signed by the action adapter", verifierID, w.sign(w.action, &receiptv1.ReadbackReceipt{ReceiptId: "rb-1", CapabilityId: c.GetCapabilityId(), Status: tt.status}), authority.ErrInvalid, "RECEIPT_INVALID"},
				{"other effect", verifierID, w.readback(c, "rb-1", "eff-9", tt.status), authority.ErrInvalid, "RECEIPT_MISMATCH"},
			} {
				_, _, err := w.k.RecordReadback(w.ctx, r.caller, r.env)
				wantRefusal(t, err, r.kind, r.reason)
			}

			got, _, err := w.k.RecordReadback(w.ctx, verifierID, w.readback(c, "rb-1", "eff-1", tt.status, "payments ledger: amount GBP 17.04"))
			if err != nil {
				t.Fatalf("RecordReadback: %v", err)
			}
			if got.GetStatus() != tt.want || got.GetReadbackReceiptId() != "rb-1" {
				t.Errorf("commitment = %v, want %s by rb-1", got, tt.want)
			}
			list, err := allCommitments(w.ctx, w.k, task)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].GetStatus() != tt.want {
				t.Errorf("Commitments = %v, want one %s", list, tt.want)
			}
			if all, _ := allCommitments(w.ctx, w.k, ""); len(all) != 1 {
				t.Errorf("Commitments of all tasks = %d, want 1", len(all))
			}
			view, err := w.k.SelfView(w.ctx, agentName, task, []string{"uncertainty", "commitments"})
			if err != nil {
				t.Fatal(err)
			}
			failed := slices.ContainsFunc(view.GetUncertainty(), func(s string) bool { return strings.Contains(s, "failed readback") })
			if failed != (tt.want == agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED) {
				t.Errorf("uncertainty = %q; failed readback reported = %v", view.GetUncertainty(), failed)
			}
			if len(view.GetCommitments()) != 1 || view.GetCommitments()[0].GetStatus() != tt.want {
				t.Errorf("self-view commitments = %v", view.GetCommitments())
			}
		})
	}
}

// TestLateOldEvidenceDoesNotRollBackState: the evidence adapter read the
// record at v42, then at v43, and recorded the two receipts in the other
// order. The record is at v43; the late v42 receipt must not make the kernel
// believe it is at v42 again and grant on stale evidence (rule 3).
func TestLateOldEvidenceDoesNotRollBackState(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	old := w.sign(w.evidence, w.evidenceReceipt(task)) // read at v42, not yet recorded
	w.clock.Advance(time.Minute)
	w.changed(task, version43)
	w.clock.Advance(time.Second)
	if _, err := w.k.RecordEvidence(w.ctx, evidenceID, old); err != nil {
		t.Fatalf("RecordEvidence of the late receipt: %v", err)
	}
	d := w.submit(proposal(task, refund(1740, subject), old))
	if d.GetCapability() != nil {
		t.Fatalf("a late v42 receipt rolled the record back from v43 and the kernel granted on it: %+v", verdictOf(d))
	}
	if diff := cmp.Diff(verdict{"OUTCOME_REVIEW", []string{"STATE_VERSION_CHANGED"}}, verdictOf(d)); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
}

// TestStaleStateReportIsIgnored: a watcher report observed before a read
// the kernel already recorded never moves the record's state back, and a
// fresh report of a change revokes at once.
func TestStaleStateReportIsIgnored(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	observedEarly := w.clock.Now()
	w.clock.Advance(time.Second)
	_, c := w.allowed(task) // reads claims-v42 after the watcher's observation
	rec, err := w.k.ReportStateChange(w.ctx, evidenceID, claimsDB, claimKey, "claims-v41", observedEarly)
	if err != nil || rec.StateChanged || len(rec.Revoked) != 0 {
		t.Fatalf("stale report = %+v, %v; want it ignored", rec, err)
	}
	w.clock.Advance(time.Second)
	rec, err = w.k.ReportStateChange(w.ctx, evidenceID, claimsDB, claimKey, version43, w.clock.Now())
	if err != nil || !rec.StateChanged || len(rec.Revoked) != 1 || rec.Revoked[0] != c.GetCapabilityId() {
		t.Fatalf("fresh report = %+v, %v; want the capability revoked", rec, err)
	}
}
