package e2e_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// refusedWith reports whether err is a refusal with the code and reason.
func refusedWith(err error, code codes.Code, reason errorv1.ErrorReason) bool {
	return status.Code(err) == code && client.Reason(err) == reason
}

// TestStateChangeReachesTheKernelWithoutARead edits the claim behind an
// outstanding capability in claims.db, and nobody reads it again: the
// evidence adapter's watcher tells the kernel, which revokes the
// capability (seen in the agent's self-view within a bounded poll); a
// proposal citing the old read goes back to REVIEW and the capability is
// refused at execution.
func TestStateChangeReachesTheKernelWithoutARead(t *testing.T) {
	st := startStack(t, devstack.Options{WatchInterval: 100 * time.Millisecond})
	ctx := testCtx(t)
	d, r := allowed(t, st, "task-watch")
	if err := demo.EditClaim(ctx, st.DataDir, demo.Claim1001, "19.40"); err != nil {
		t.Fatal(err)
	}
	c := awaitCommitmentMoved(t, st, "task-watch", 15*time.Second)
	if c.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED || !strings.Contains(c.GetNote(), "claims-v42 → claims-v43") {
		t.Fatalf("after the edit the commitment is %v (%q), want REVOKED by the change to claims-v43", c.GetStatus(), c.GetNote())
	}
	again, err := st.Agent.Propose(ctx, client.Proposal{Task: "task-watch", Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Review() || !slices.Contains(again.Codes(), "STATE_VERSION_CHANGED") || again.GetCapability() != nil {
		t.Errorf("the proposal citing the old read: %v %v, want REVIEW with STATE_VERSION_CHANGED", again.GetDecision().GetOutcome(), again.Codes())
	}
	if _, err := st.Agent.Execute(ctx, d); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("the outstanding capability at execution: %v, want FailedPrecondition", err)
	}
	if n := payments(t, st, "1=1"); n != 0 {
		t.Errorf("%d payments after the change", n)
	}
	// The change came from the watcher: the kernel logged a state change
	// and recorded no read after the first.
	logs, err := os.ReadFile(st.LogPath(devstack.Kernel))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), `"msg":"state change"`) || strings.Count(string(logs), `"msg":"evidence"`) != 1 {
		t.Errorf("the kernel's log does not show one read and a reported state change:\n%s", logs)
	}
}

// awaitCommitmentMoved polls the task's one commitment, through the
// agent's self-view, until it is no longer AUTHORISED or bound has passed,
// and returns it as last seen.
func awaitCommitmentMoved(t *testing.T, st *stack, task string, bound time.Duration) *agentv1.Commitment {
	t.Helper()
	ctx := testCtx(t)
	for deadline := time.Now().Add(bound); ; {
		v, err := st.Agent.SelfView(ctx, task, "commitments")
		if err != nil {
			t.Fatal(err)
		}
		if len(v.GetCommitments()) != 1 {
			t.Fatalf("commitments %v, want the one capability", v.GetCommitments())
		}
		c := v.GetCommitments()[0]
		if c.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED || time.Now().After(deadline) {
			return c
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadsAreConfined reads around the task's record: another claim of
// the same claimant, and a receipt of another claim, are refused.
func TestReadsAreConfined(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	st.bind(t, demo.ExpenseRefund, "task-confined", demo.Claim1001)
	read := func(source, key string, fields ...string) error {
		_, err := st.Agent.Read(ctx, "task-confined", demo.RefundPurpose, source, key, fields...)
		return err
	}
	tests := []struct {
		name, source, key string
		fields            []string
		code              codes.Code
		reason            errorv1.ErrorReason
	}{
		{"the task's claim", "claims_db", demo.Claim1001, demo.ClaimFields, codes.OK, errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED},
		{"the task's claim's receipt", "receipt_upload", "R-2001", []string{"receipt_total_within_limit"}, codes.OK, errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED},
		{"another claim of the same claimant", "claims_db", demo.Claim1002, demo.ClaimFields, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_RECORD_OUTSIDE_BINDING},
		{"another claimant's claim", "claims_db", "C-9001", demo.ClaimFields, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_RECORD_OUTSIDE_BINDING},
		{"a receipt of another claim", "receipt_upload", demo.Receipt2002, []string{"receipt_total_within_limit"}, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_RECORD_OUTSIDE_TASK},
		{"the receipt's raw total", "receipt_upload", "R-2001", []string{"receipt_total"}, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_FIELDS_OUTSIDE_GRANT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := read(tt.source, tt.key, tt.fields...)
			if !refusedWith(err, tt.code, tt.reason) {
				t.Errorf("read %s/%s: %v (%s), want %v %s", tt.source, tt.key, err, client.Reason(err), tt.code, tt.reason)
			}
		})
	}
}

// TestChangedEvidenceIsRefused cites the read in every other form: its
// payload changed and re-signed with the evidence adapter's own key, the
// same payload signed by another key, its signature or key id stripped.
// Only the envelope the kernel recorded is accepted.
func TestChangedEvidenceIsRefused(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	st.bind(t, demo.ExpenseRefund, "task-envelopes", demo.Claim1001)
	r, err := st.Agent.Read(ctx, "task-envelopes", demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(identity string, m proto.Message) *receiptv1.Envelope {
		key, err := pki.LoadSigningKey(pki.IdentityDir(st.PKI, identity), identity)
		if err != nil {
			t.Fatal(err)
		}
		env, err := envelope.NewSigner(devstack.Evidence, key).Sign(m)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	richer := proto.Clone(r.Receipt).(*receiptv1.EvidenceReceipt)
	richer.Values.Fields["receipt_total"] = structpb.NewStringValue("99.00")
	stripped := proto.Clone(r.Signed).(*receiptv1.Envelope)
	stripped.Signature = nil
	noKey := proto.Clone(r.Signed).(*receiptv1.Envelope)
	noKey.KeyId = ""
	propose := func(ev *receiptv1.Envelope) (*client.Decision, error) {
		return st.Agent.Propose(ctx, client.Proposal{Task: "task-envelopes", Purpose: demo.RefundPurpose, Tool: "refund",
			Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{{Signed: ev}}})
	}
	for name, env := range map[string]*receiptv1.Envelope{
		"changed and re-signed by the evidence adapter": sign(devstack.Evidence, richer),
		"signed by the agent in the adapter's name":     sign("agent", r.Receipt),
		"signature stripped":                            stripped,
		"key id stripped":                               noKey,
	} {
		if _, err := propose(env); !refusedWith(err, codes.InvalidArgument, errorv1.ErrorReason_ERROR_REASON_EVIDENCE_INVALID) {
			t.Errorf("%s: %v (%s), want InvalidArgument EVIDENCE_INVALID", name, err, client.Reason(err))
		}
	}
	if d, err := propose(r.Signed); err != nil || !d.Allowed() {
		t.Errorf("the recorded envelope: %v %v, want ALLOW", d.GetDecision(), err)
	}
}

// TestRepeatedRequestIDReturnsTheFirstAnswer submits the same proposal
// twice with one request_id, as a client whose reply was lost would: the
// second answer is the first (one capability), and the id cannot be used
// for another call.
func TestRepeatedRequestIDReturnsTheFirstAnswer(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	st.bind(t, demo.ExpenseRefund, "task-request", demo.Claim1001)
	r, err := st.Agent.Read(ctx, "task-request", demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	p := client.Proposal{Task: "task-request", Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}, RequestID: "req-1"}
	first, err := st.Agent.Propose(ctx, p)
	if err != nil || !first.Allowed() || first.GetRepeated() {
		t.Fatalf("first: %v %v", first.GetDecision(), err)
	}
	second, err := st.Agent.Propose(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !second.GetRepeated() || second.GetDecisionId() != first.GetDecisionId() || !proto.Equal(second.GetCapability(), first.GetCapability()) {
		t.Errorf("second: repeated %v, decision %s (first %s), same capability %v", second.GetRepeated(), second.GetDecisionId(), first.GetDecisionId(),
			proto.Equal(second.GetCapability(), first.GetCapability()))
	}
	v, err := st.Agent.SelfView(ctx, "task-request", "commitments")
	if err != nil || len(v.GetCommitments()) != 1 {
		t.Errorf("commitments %v (%v), want the one capability", v.GetCommitments(), err)
	}
	other := p
	other.Args = demo.Refund(demo.Claim1001, 1000, demo.Claimant)
	if _, err := st.Agent.Propose(ctx, other); !refusedWith(err, codes.InvalidArgument, errorv1.ErrorReason_ERROR_REASON_REQUEST_ID_REUSED) {
		t.Errorf("the request id for another call: %v (%s), want REQUEST_ID_REUSED", err, client.Reason(err))
	}
}

// TestOverLimitRequestsAreInvalid sends requests past the limits the
// .proto files declare: each is refused at the edge, InvalidArgument with
// ERROR_REASON_INVALID_REQUEST, before anything is decided.
func TestOverLimitRequestsAreInvalid(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	st.bind(t, demo.ExpenseRefund, "task-limits", demo.Claim1001)
	r, err := st.Agent.Read(ctx, "task-limits", demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	fields := make([]string, 300)
	for i := range fields {
		fields[i] = demo.ClaimFields[i%len(demo.ClaimFields)]
	}
	proposal := func(change func(*client.Proposal)) error {
		p := client.Proposal{Task: "task-limits", Purpose: demo.RefundPurpose, Tool: "refund",
			Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}}
		change(&p)
		_, err := st.Agent.Propose(ctx, p)
		return err
	}
	for name, err := range map[string]error{
		"17 evidence receipts": proposal(func(p *client.Proposal) { p.Evidence = slices.Repeat(p.Evidence, 17) }),
		"arguments over 64 KiB": proposal(func(p *client.Proposal) {
			p.Args = map[string]any{"claim_id": demo.Claim1001, "reason_code": strings.Repeat("x", 70000)}
		}),
		"a request id of 200 characters": proposal(func(p *client.Proposal) { p.RequestID = strings.Repeat("r", 200) }),
		"a 300-item field list": func() error {
			_, err := st.Agent.Read(ctx, "task-limits", demo.RefundPurpose, "claims_db", demo.Claim1001, fields...)
			return err
		}(),
	} {
		if !refusedWith(err, codes.InvalidArgument, errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST) {
			t.Errorf("%s: %v (%s), want InvalidArgument INVALID_REQUEST", name, err, client.Reason(err))
		}
	}
	v, err := st.Agent.SelfView(ctx, "task-limits", "commitments")
	if err != nil || len(v.GetCommitments()) != 0 {
		t.Errorf("commitments %v (%v) after refused requests, want none", v.GetCommitments(), err)
	}
}
