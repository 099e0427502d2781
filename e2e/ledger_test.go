package e2e_test

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/money"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func class(c *ledgerv1.ClassifiedItem) string {
	return strings.TrimPrefix(c.GetClass().String(), "CANON_CLASS_")
}

func ambitctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(binDir+"/ambitctl", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestTransferScenario runs the seed's transfer end to end over the
// governance API: POL-2026-08 is superseded by POL-2026-09, which becomes
// canonical only through its own promotion; the old contract's task loses
// its reach; a second agent receives only the declared subset; the ledger
// can be replayed as it was and its log is tamper-evident.
func TestTransferScenario(t *testing.T) {
	st := startStack(t, devstack.Options{Agents: 2})
	ctx := testCtx(t)
	gov := st.Gov
	e, _ := st.Example(demo.ExpenseRefund)

	old, err := demo.Contract(e, "transfer-a", demo.Claim1001, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ref := demo.ProvenanceRef(e, old)
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: demo.ContractItem("POL-2026-08", ref, old)}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "POL-2026-08"}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: "transfer-a", ContractItemId: "POL-2026-08", Agent: "agent"}); err != nil {
		t.Fatal(err)
	}
	// The second agent has its own certificate and its own connections.
	agentB, err := st.Stack.Agent(ctx, "agent-2")
	if err != nil {
		t.Fatal(err)
	}
	defer agentB.Close()
	readAs := func(as *client.Agent, task string, fields ...string) (*client.Evidence, error) {
		return as.Read(ctx, task, demo.RefundPurpose, "claims_db", demo.Claim1001, fields...)
	}
	proposeAs := func(as *client.Agent, task string, minor int64, ev *client.Evidence) *client.Decision {
		t.Helper()
		d, err := as.Propose(ctx, client.Proposal{Task: task, Purpose: demo.RefundPurpose, Tool: "refund",
			Args: demo.Refund(demo.Claim1001, minor, demo.Claimant), Evidence: []*client.Evidence{ev}})
		if err != nil {
			t.Fatalf("propose in %s: %v", task, err)
		}
		return d
	}
	read := func(task string, fields ...string) (*client.Evidence, error) {
		return readAs(st.Agent, task, fields...)
	}
	propose := func(task string, minor int64, ev *client.Evidence) *client.Decision {
		t.Helper()
		return proposeAs(st.Agent, task, minor, ev)
	}
	r, err := read("transfer-a", demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	first := propose("transfer-a", 1740, r)
	if !first.Allowed() {
		t.Fatalf("under POL-2026-08: %v", first.GetDecision())
	}
	beforeSupersession := time.Now().UTC()
	time.Sleep(5 * time.Millisecond) // the replay instant must precede the supersession

	// The replacement is its own item: it needs its own provenance and an
	// authorised promotion.
	replacement := proto.Clone(old).(*contractv1.Contract)
	replacement.Version = "2"
	replacement.Action.MaxAmount = money.New("GBP", 8000)
	item := demo.ContractItem("POL-2026-09", demo.ProvenanceRef(e, replacement), replacement)
	item.SupersedesRef = "POL-2026-08"
	for _, bad := range []struct{ id, ref string }{{"POL-2026-09-DRAFT", ""}, {"POL-2026-09-PROSE", "the new refund policy, as agreed"}} {
		noProvenance := proto.Clone(item).(*ledgerv1.CanonItem)
		noProvenance.CanonItemId, noProvenance.ProvenanceRef = bad.id, bad.ref
		draft, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: noProvenance})
		if err != nil {
			t.Fatal(err)
		}
		if class(draft.GetItem()) != "UNKNOWN" {
			t.Errorf("a replacement with provenance %q is %s, want UNKNOWN", bad.ref, class(draft.GetItem()))
		}
		if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: bad.id}); status.Code(err) == codes.OK {
			t.Errorf("an item with provenance %q was promoted", bad.ref)
		}
	}
	proposed, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: item})
	if err != nil {
		t.Fatal(err)
	}
	if class(proposed.GetItem()) != "PROVISIONAL" {
		t.Errorf("proposed POL-2026-09 is %s, want PROVISIONAL", class(proposed.GetItem()))
	}
	// Same identity, other content: refused.
	reused := proto.Clone(item).(*ledgerv1.CanonItem)
	reused.Contract.Action.MaxAmount = money.New("GBP", 9000)
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: reused}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("identity reuse: %v, want AlreadyExists", err)
	}
	// A governance identity without promotion authority cannot promote.
	govConn, err := st.Conn(ctx, st.Kernel.Governance, devstack.Governance)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kernelv1.NewGovernanceServiceClient(govConn).PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "POL-2026-09"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("promotion without authority: %v, want PermissionDenied", err)
	}
	promoted, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "POL-2026-09"})
	if err != nil || class(promoted.GetItem()) != "CANONICAL" {
		t.Fatalf("promote POL-2026-09: %v %v", promoted.GetItem(), err)
	}
	sup, err := gov.SupersedeItem(ctx, &kernelv1.SupersedeItemRequest{OldItemId: "POL-2026-08", NewItemId: "POL-2026-09"})
	if err != nil {
		t.Fatal(err)
	}
	if class(sup.GetOldItem()) != "DEPRECATED" || class(sup.GetNewItem()) != "CANONICAL" {
		t.Errorf("after supersession: old %s, new %s", class(sup.GetOldItem()), class(sup.GetNewItem()))
	}

	// The task still bound to the old contract lost its reach.
	v, err := st.Agent.SelfView(ctx, "transfer-a", "commitments", "capabilities")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.GetCommitments()) != 1 || v.GetCommitments()[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED || len(v.GetCapabilities()) != 0 {
		t.Errorf("after supersession: commitments %v, capabilities %v", v.GetCommitments(), v.GetCapabilities())
	}
	if _, err := read("transfer-a", demo.ClaimFields...); status.Code(err) != codes.PermissionDenied {
		t.Errorf("read under a deprecated contract: %v, want PermissionDenied", err)
	}
	stale := propose("transfer-a", 1740, r)
	if stale.GetCapability() != nil || !slices.Contains(stale.Codes(), "CONTRACT_NOT_CANONICAL") {
		t.Errorf("under the deprecated contract: %v", stale.GetDecision())
	}
	// Rebinding to the new canon restores reach, under the new limit.
	if _, err := gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: "transfer-a", ContractItemId: "POL-2026-09", Agent: "agent"}); err != nil {
		t.Fatal(err)
	}
	r2, err := read("transfer-a", demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	d := propose("transfer-a", 1740, r2)
	if !d.Allowed() {
		t.Fatalf("under POL-2026-09: %v", d.GetDecision())
	}
	var dr receiptv1.DecisionReceipt
	if err := proto.Unmarshal(d.GetDecisionReceipt().GetPayload(), &dr); err != nil {
		t.Fatal(err)
	}
	if dr.GetContractItemId() != "POL-2026-09" || dr.GetContractHash() != promoted.GetItem().GetItem().GetContentHash() || dr.GetLedgerHead() == "" {
		t.Errorf("decision receipt names %q %q head %q", dr.GetContractItemId(), dr.GetContractHash(), dr.GetLedgerHead())
	}

	// Handoff: the second agent receives only the declared subset.
	filter := &ledgerv1.HandoffFilter{
		Fields: []string{"claim_id", "claimant_id", "receipt_total", "salary"}, Sources: []string{"claims_db"},
		Tools: []string{"refund"}, Destinations: []string{"claimant"}, VisibleFacts: []string{"commitments", "credentials"},
		MaxAmount: money.New("GBP", 3000),
	}
	child, err := gov.DeriveHandoff(ctx, &kernelv1.DeriveHandoffRequest{ParentItemId: "POL-2026-09", ChildItemId: "POL-2026-09/agent-2", ChildTaskId: "transfer-b", ChildAgent: "agent-2", Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	if class(child.GetItem()) == "CANONICAL" {
		t.Error("a derived child was canonical before its own promotion")
	}
	cc := child.GetItem().GetItem().GetContract()
	var childFields []string
	for _, src := range cc.GetEvidence().GetSources() {
		childFields = append(childFields, src.GetName()+":"+strings.Join(src.GetFields(), ","))
	}
	if strings.Join(childFields, " ") != "claims_db:claim_id,claimant_id,receipt_total" ||
		strings.Join(cc.GetReflexive().GetVisibleFacts(), ",") != "commitments" || cc.GetAction().GetMaxAmount().GetMinorUnits() != 3000 {
		t.Errorf("child contract is not parent ∩ filter: sources %v, %v", childFields, cc)
	}
	if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "POL-2026-09/agent-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := readAs(agentB, "transfer-b", "claim_id", "receipt_date"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("child reading a field outside its subset: %v, want PermissionDenied", err)
	}
	rb, err := readAs(agentB, "transfer-b", "claim_id", "claimant_id", "receipt_total")
	if err != nil {
		t.Fatal(err)
	}
	// The first agent has no reach into the second agent's task.
	if _, err := read("transfer-b", "claim_id"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("first agent reading for the child task: %v, want PermissionDenied", err)
	}
	if _, err := st.Agent.Propose(ctx, client.Proposal{Task: "transfer-b", Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{rb}}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("first agent proposing in the child task: %v, want PermissionDenied", err)
	}
	if d := proposeAs(agentB, "transfer-b", 4000, rb); !d.Denied() {
		t.Errorf("child above its lowered limit: %v", d.GetDecision())
	}
	if d := proposeAs(agentB, "transfer-b", 1740, rb); !d.Allowed() {
		t.Errorf("child within its subset: %v", d.GetDecision())
	}
	// Without a declared filter the child is HOLD and grants nothing.
	hold, err := gov.DeriveHandoff(ctx, &kernelv1.DeriveHandoffRequest{ParentItemId: "POL-2026-09", ChildItemId: "POL-2026-09/agent-c", ChildTaskId: "transfer-c", ChildAgent: "agent-2"})
	if err != nil {
		t.Fatal(err)
	}
	if class(hold.GetItem()) != "HOLD" {
		t.Errorf("unfiltered handoff is %s, want HOLD", class(hold.GetItem()))
	}
	if _, err := readAs(agentB, "transfer-c", "claim_id"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("read under a HOLD contract: %v, want PermissionDenied", err)
	}

	// Replay: the ledger as it was before the supersession.
	out, err := ambitctl(t, "ledger", "at", beforeSupersession.Format(time.RFC3339Nano), "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", devstack.PolicyOwner)
	if err != nil {
		t.Fatalf("ledger at: %v\n%s", err, out)
	}
	if !strings.Contains(out, "POL-2026-08") || !lineHas(out, "POL-2026-08 ", "CANONICAL") || strings.Contains(out, "POL-2026-09 ") {
		t.Errorf("ledger at %s:\n%s", beforeSupersession, out)
	}
	out, err = ambitctl(t, "ledger", "at", "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", devstack.PolicyOwner)
	if err != nil || !lineHas(out, "POL-2026-08 ", "DEPRECATED") || !lineHas(out, "POL-2026-09 ", "CANONICAL") {
		t.Errorf("ledger now (%v):\n%s", err, out)
	}

	// The log is tamper-evident, also with the kernel stopped.
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	if out, err := ambitctl(t, "ledger", "verify", "--db", st.KernelDB); err != nil || !strings.HasPrefix(out, "OK") {
		t.Fatalf("verify intact log: %v\n%s", err, out)
	}
	db, err := sqldb.Open(st.KernelDB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE journal SET body = x'00' WHERE seq = 7`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, err = ambitctl(t, "ledger", "verify", "--db", st.KernelDB)
	if err == nil || !strings.Contains(out, "entry 7") {
		t.Errorf("verify tampered log: %v\n%s", err, out)
	}
}

// lineHas reports whether a line starting with prefix contains word.
func lineHas(out, prefix, word string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, word) {
			return true
		}
	}
	return false
}
