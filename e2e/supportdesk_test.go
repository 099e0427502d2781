package e2e_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/examples/demo"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/devstack"
)

// TestSupportdeskThroughItsServer runs the second domain end to end
// through the real supportdesk-mcp: the story's every expectation (reads
// of the trusted ticket and the instruction-bearing message, a reply to
// the ticket's customer and not another, credits within the limit, above
// the approval threshold and over the cap, the injected requests, the
// irreversible closing), then the kernel's commitments and the desk's own
// state, read through its own tools, agree: four effects, each verified
// and each once.
func TestSupportdeskThroughItsServer(t *testing.T) {
	st := startStack(t, devstack.Options{}, demo.Supportdesk)
	ctx := testCtx(t)
	var out bytes.Buffer
	if err := st.Story(&out).RunSupportdesk(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	commitments, err := st.Gov.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{TaskId: "desk-task"})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	var closeKey string
	for _, c := range commitments.GetCommitments() {
		if c.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED {
			t.Errorf("commitment %s (%s) is %v, want VERIFIED", c.GetCapabilityId(), c.GetTool(), c.GetStatus())
		}
		tools = append(tools, c.GetTool())
	}
	if want := "reply_to_customer issue_credit issue_credit close_ticket"; strings.Join(tools, " ") != want {
		t.Errorf("commitments for %s, want %s", strings.Join(tools, " "), want)
	}
	desk, err := demo.OpenDesk(ctx, st.Info.Examples[demo.Supportdesk][demo.DeskURL])
	if err != nil {
		t.Fatal(err)
	}
	defer desk.Close()
	mine, err := desk.Ticket(ctx, demo.Ticket501)
	if err != nil {
		t.Fatal(err)
	}
	// Three writes before the closing, and the closing: version 3 + 4.
	if mine.Status != "closed" || mine.CreditTotalMinor != 4500 || mine.Version != 7 || mine.ClosedBy == "" {
		t.Errorf("T-501 at the desk: %+v, want closed with GBP 45.00 of credits after four writes", mine)
	}
	closeKey = mine.ClosedBy
	for _, c := range commitments.GetCommitments() {
		if c.GetTool() != "close_ticket" {
			continue
		}
		entries, err := st.Gov.ExportReceipt(ctx, &kernelv1.ExportReceiptRequest{ReceiptId: c.GetEffectReceiptId()})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(entries.GetBundle().GetEnvelope().GetPayload(), []byte(closeKey)) {
			t.Errorf("the desk was closed under key %s, which the closing's effect receipt does not carry", closeKey)
		}
	}
	other, err := desk.Ticket(ctx, demo.Ticket777)
	if err != nil {
		t.Fatal(err)
	}
	if other.Status != "open" || other.CreditTotalMinor != 0 || other.Version != 1 {
		t.Errorf("T-777 at the desk: %+v, want it untouched", other)
	}
}
