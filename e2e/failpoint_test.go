package e2e_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ambitkernel/ambit/examples/demo"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/service"
)

// TestCrashAtFailpoints arms, one process at a time, a failpoint where a
// crash falls between two durable steps of a loop, makes the call that
// reaches it — the process dies by SIGKILL and the agent gets no answer
// — restarts the process without it and retries as an agent would: the
// kernel between committing a decision and answering it, the evidence
// adapter between recording a read and releasing it, the action adapter
// between starting a key and paying, the verifier between reading back
// and recording. Each retry finishes the step exactly once.
func TestCrashAtFailpoints(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	const task = "task-failpoints"
	arm := func(process, point string) {
		t.Helper()
		if err := st.Restart(ctx, process, []string{service.FailpointEnv + "=" + point}); err != nil {
			t.Fatal(err)
		}
	}
	// died checks that the call found no answer because the process
	// killed itself, and starts it again without the failpoint.
	died := func(process string, err error) {
		t.Helper()
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("call into the failpoint of %s: %v, want no answer (Unavailable)", process, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := st.Wait(wctx, process); err != nil {
			t.Fatalf("%s did not die at its failpoint: %v", process, err)
		}
		if err := st.Restart(ctx, process, nil); err != nil {
			t.Fatal(err)
		}
	}
	st.bind(t, demo.ExpenseRefund, task, demo.Claim1001)
	r, err := st.Agent.Read(ctx, task, demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}

	// The kernel: the decision is committed, its answer lost; the same
	// request id gets the first answer, not a second decision.
	p := client.Proposal{Task: task, Purpose: demo.RefundPurpose, Tool: "refund", RequestID: "proposal-1",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}}
	arm(devstack.Kernel, "reply:SubmitProposal")
	_, err = st.Agent.Propose(ctx, p)
	died(devstack.Kernel, err)
	var d *client.Decision
	retryUnavailable(t, func() (err error) { d, err = st.Agent.Propose(ctx, p); return err })
	if !d.Allowed() || !d.GetRepeated() {
		t.Fatalf("proposal again: %v, repeated %v; want the first ALLOW repeated", d.GetDecision().GetOutcome(), d.GetRepeated())
	}
	commitments := func() []*agentv1.Commitment {
		t.Helper()
		resp, err := st.Gov.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{TaskId: task})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetCommitments()
	}
	if c := commitments(); len(c) != 1 || c[0].GetCapabilityId() != capabilityOf(t, d.GetCapability()).GetCapabilityId() {
		t.Fatalf("commitments %v, want the one capability the answer carries", c)
	}

	// The evidence adapter: the read is recorded, never released; the
	// agent reads again and both reads are in the journal.
	arm(devstack.Evidence, "answer:RecordEvidence")
	_, err = st.Agent.Read(ctx, task, demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	died(devstack.Evidence, err)
	var again *client.Evidence
	retryUnavailable(t, func() (err error) {
		again, err = st.Agent.Read(ctx, task, demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
		return err
	})
	reads := evidenceOf(t, st, task)
	if len(reads) != 3 || reads[0] != r.Receipt.GetReceiptId() || reads[2] != again.Receipt.GetReceiptId() {
		t.Errorf("journaled reads %v, want %s, the unreleased one and %s", reads, r.Receipt.GetReceiptId(), again.Receipt.GetReceiptId())
	}

	// The action adapter: the key is Started, nothing is paid; the retry
	// pays once.
	arm(devstack.Action, "action.after-start")
	_, err = st.Agent.Execute(ctx, d)
	died(devstack.Action, err)
	if n := payments(t, st, "idempotency_key = ?", d.GetIdempotencyKey()); n != 0 {
		t.Fatalf("%d payments before the retry, want none", n)
	}
	var eff *actionv1.ExecuteResponse
	retryUnavailable(t, func() (err error) { eff, err = st.Agent.Execute(ctx, d); return err })
	if n := payments(t, st, "idempotency_key = ?", d.GetIdempotencyKey()); n != 1 {
		t.Fatalf("%d payments after the retry, want 1", n)
	}

	// The verifier: it read the payment back and died before recording
	// it; the commitment stays EFFECTED until the retry verifies it.
	arm(devstack.Verifier, "call:RecordReadback")
	_, err = st.Agent.Verify(ctx, d, eff)
	died(devstack.Verifier, err)
	if c := commitments(); c[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED {
		t.Fatalf("commitment %v before the readback is recorded, want EFFECTED", c[0].GetStatus())
	}
	var rb *verifierv1.VerifyResponse
	retryUnavailable(t, func() (err error) { rb, err = st.Agent.Verify(ctx, d, eff); return err })
	if rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		t.Fatalf("readback %v", rb.GetReceipt())
	}
	if c := commitments(); c[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED || c[0].GetEffectReceiptId() != eff.GetReceipt().GetReceiptId() {
		t.Errorf("commitment %v, want VERIFIED with effect %s", c[0], eff.GetReceipt().GetReceiptId())
	}
}

// retryUnavailable calls fn until it answers, as an agent retries while a
// restarted process's connections come back; for at most ten seconds.
func retryUnavailable(t *testing.T, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			t.Fatalf("retry: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// evidenceOf lists the ids of the evidence receipts journaled for a task,
// in journal order.
func evidenceOf(t *testing.T, st *stack, task string) []string {
	t.Helper()
	var out []string
	for after := int64(0); ; {
		resp, err := st.Gov.ListEntries(testCtx(t), &kernelv1.ListEntriesRequest{AfterSeq: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetEntries()) == 0 {
			return out
		}
		for _, e := range resp.GetEntries() {
			after = e.GetSeq()
			if e.GetKind() != "evidence" {
				continue
			}
			var env receiptv1.Envelope
			var ev receiptv1.EvidenceReceipt
			if err := proto.Unmarshal(e.GetBody(), &env); err != nil {
				t.Fatal(err)
			}
			if err := proto.Unmarshal(env.GetPayload(), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.GetTaskId() == task {
				out = append(out, ev.GetReceiptId())
			}
		}
	}
}

// TestRedeemedCapabilityOutlivesItsExpiry: the action adapter dies after
// the kernel redeemed a capability and before anything was written or
// paid; the agent's retry comes after the capability's expiry. The
// capability was redeemed in time, so the retry pays, once, and the
// commitment closes; it is not left REDEEMED with the task's one action
// spent and nothing paid. A capability that expired without being
// redeemed is still refused.
func TestRedeemedCapabilityOutlivesItsExpiry(t *testing.T) {
	st := startStack(t, devstack.Options{CapabilityTTL: 3 * time.Second})
	ctx := testCtx(t)
	d, _ := allowed(t, st, "task-late")
	stale, _ := allowed(t, st, "task-never")
	if err := st.Restart(ctx, devstack.Action, []string{service.FailpointEnv + "=answer:RedeemCapability"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Agent.Execute(ctx, d); status.Code(err) != codes.Unavailable {
		t.Fatalf("execute into the failpoint: %v, want no answer", err)
	}
	if err := st.Wait(ctx, devstack.Action); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(stale.GetCapabilityExpiresAt().AsTime().Add(100 * time.Millisecond)))
	if err := st.Restart(ctx, devstack.Action, nil); err != nil {
		t.Fatal(err)
	}
	eff, err := st.Agent.Execute(ctx, d)
	if err != nil {
		t.Fatalf("retry of the redeemed capability after its expiry: %v (%s)", err, client.Reason(err))
	}
	if n := payments(t, st, "idempotency_key = ?", d.GetIdempotencyKey()); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
	rb, err := st.Agent.Verify(ctx, d, eff)
	if err != nil || rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		t.Fatalf("readback %v: %v", rb.GetReceipt(), err)
	}
	// Never redeemed and expired: refused, nothing paid.
	_, err = st.Agent.Execute(ctx, stale)
	if !refusedWith(err, codes.FailedPrecondition, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_EXPIRED) {
		t.Errorf("execute an expired capability: %v (%s), want FailedPrecondition CAPABILITY_EXPIRED", err, client.Reason(err))
	}
	if n := payments(t, st, "idempotency_key = ?", stale.GetIdempotencyKey()); n != 0 {
		t.Errorf("%d payments for the expired capability", n)
	}
	for task, want := range map[string]agentv1.CommitmentStatus{
		"task-late":  agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED,
		"task-never": agentv1.CommitmentStatus_COMMITMENT_STATUS_EXPIRED,
	} {
		resp, err := st.Gov.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{TaskId: task})
		if err != nil || len(resp.GetCommitments()) != 1 || resp.GetCommitments()[0].GetStatus() != want {
			t.Errorf("%s: commitments %v (%v), want one %s", task, resp.GetCommitments(), err, want)
		}
	}
}
