package e2e_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
)

// TestIrreversibleClosingUnderRule2 reaches coupling rule 2 on the live
// stack: the support desk's close_ticket is irreversible, and the desk's
// contract grants it only on fresh evidence with an independent approval.
// Fresh evidence without the approval is REVIEW
// IRREVERSIBLE_APPROVAL_REQUIRED; approved, but on a read older than rule
// 2 allows, REVIEW IRREVERSIBLE_EVIDENCE_TOO_OLD and no capability;
// approved on a fresh read, ALLOW: the desk closes the ticket once (a
// retry returns the first receipt), the verifier reads it back VERIFIED,
// and the closing cannot be proposed again.
//
// The processes keep the wall clock, so the contract is the shipped one
// with rule 2's window cut from 300 s to 3 s; every other line is as
// shipped, and the evidence aperture's own limit stays an hour.
func TestIrreversibleClosingUnderRule2(t *testing.T) {
	const window = 3 // seconds
	st := startStack(t, devstack.Options{}, demo.Supportdesk)
	ctx := testCtx(t)
	e, _ := st.Example(demo.Supportdesk)
	c, err := demo.Contract(e, "close-task", demo.Ticket501, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.GetCoupling().GetIrreversibleMaxEvidenceAgeSeconds(); got != 300 || !c.GetCoupling().GetIrreversibleRequiresApproval() {
		t.Fatalf("the shipped contract's rule 2: %d s, approval %v; update this test", got, c.GetCoupling().GetIrreversibleRequiresApproval())
	}
	c.Coupling.IrreversibleMaxEvidenceAgeSeconds = window
	if _, err := st.Gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: demo.ContractItem("ctr-close-task", demo.ProvenanceRef(e, c), c)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "ctr-close-task"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: "close-task", ContractItemId: "ctr-close-task", Agent: st.Agents[0]}); err != nil {
		t.Fatal(err)
	}
	conn, err := st.Conn(ctx, st.Kernel.Governance, devstack.Governance)
	if err != nil {
		t.Fatal(err)
	}
	approver := kernelv1.NewGovernanceServiceClient(conn)

	read := func() *client.Evidence {
		t.Helper()
		ev, err := st.Agent.Read(ctx, "close-task", demo.DeskPurpose, "tickets", demo.Ticket501, demo.TicketFields...)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	closing := client.Proposal{Task: "close-task", Purpose: demo.DeskPurpose, Tool: "close_ticket", Args: map[string]any{"ticket_id": demo.Ticket501}}
	propose := func(p client.Proposal) *client.Decision {
		t.Helper()
		d, err := st.Agent.Propose(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Fresh evidence, no approval yet.
	closing.Evidence = []*client.Evidence{read()}
	d := propose(closing)
	if !d.Review() || !slices.Equal(d.Codes(), []string{"IRREVERSIBLE_APPROVAL_REQUIRED"}) || d.GetApprovalId() == "" || d.GetCapability() != nil {
		t.Fatalf("fresh, unapproved: %v %v (approval %q), want REVIEW [IRREVERSIBLE_APPROVAL_REQUIRED] with a pending approval", d.GetDecision().GetOutcome(), d.Codes(), d.GetApprovalId())
	}
	if _, err := approver.DecideApproval(ctx, &kernelv1.DecideApprovalRequest{ApprovalId: d.GetApprovalId(), Approve: true, Note: "customer confirmed"}); err != nil {
		t.Fatal(err)
	}
	closing.ApprovalID = d.GetApprovalId()

	// Approved, but the read has aged past rule 2's window (ages are whole
	// seconds, rounded up).
	time.Sleep((window + 1) * time.Second)
	d = propose(closing)
	if !d.Review() || !slices.Equal(d.Codes(), []string{"IRREVERSIBLE_EVIDENCE_TOO_OLD"}) || d.GetCapability() != nil {
		t.Fatalf("approved, stale: %v %v, want REVIEW [IRREVERSIBLE_EVIDENCE_TOO_OLD] and no capability", d.GetDecision().GetOutcome(), d.Codes())
	}

	// Approved, on a fresh read.
	closing.Evidence = []*client.Evidence{read()}
	d = propose(closing)
	if !d.Allowed() {
		t.Fatalf("approved, fresh: %v %v, want ALLOW", d.GetDecision().GetOutcome(), d.Codes())
	}
	eff, err := st.Agent.Execute(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.Agent.Execute(ctx, d)
	if err != nil || !again.GetRepeated() || again.GetReceipt().GetReceiptId() != eff.GetReceipt().GetReceiptId() {
		t.Errorf("a retry: %v, repeated %v, want the first receipt", err, again.GetRepeated())
	}
	rb, err := st.Agent.Verify(ctx, d, eff)
	if err != nil {
		t.Fatal(err)
	}
	if rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		t.Errorf("readback %v %v, want VERIFIED", rb.GetReceipt().GetStatus(), rb.GetReceipt().GetFindings())
	}
	desk, err := demo.OpenDesk(ctx, st.Info.Examples[demo.Supportdesk][demo.DeskURL])
	if err != nil {
		t.Fatal(err)
	}
	defer desk.Close()
	ticket, err := desk.Ticket(ctx, demo.Ticket501)
	if err != nil {
		t.Fatal(err)
	}
	if ticket.Status != "closed" || ticket.ClosedBy != d.GetIdempotencyKey() || ticket.Version != 4 {
		t.Errorf("T-501 at the desk: %+v, want closed once, under the capability's key %s", ticket, d.GetIdempotencyKey())
	}
	// Closed is closed: a fresh read shows it, and another closing fails
	// the tool's constraint.
	closing.Evidence, closing.ApprovalID = []*client.Evidence{read()}, ""
	d = propose(closing)
	if !d.Denied() || !slices.ContainsFunc(d.Codes(), func(c string) bool { return strings.HasSuffix(c, ":TICKET_NOT_OPEN") }) {
		t.Errorf("closing again: %v %v, want DENY with TICKET_NOT_OPEN", d.GetDecision().GetOutcome(), d.Codes())
	}
}
