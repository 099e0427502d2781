package e2e_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"google.golang.org/grpc/codes"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// TestDemoStory tells both stories against the real processes and the
// real desk, then checks what the processes logged: a line per decision,
// effect and readback, and never an evidence value.
func TestDemoStory(t *testing.T) {
	st := startStack(t, devstack.Options{}, demo.ExpenseRefund, demo.Supportdesk)
	var out bytes.Buffer
	if err := st.Story(&out).Run(testCtx(t)); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("the story:\n%s", out.String())
	logs := readLogs(t, st)
	for _, want := range []string{`"msg":"decision"`, `"msg":"effect"`, `"msg":"readback"`, `"msg":"evidence"`, `"msg":"state change"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s line in the logs", want)
		}
	}
	for _, secret := range []string{"FAKE", "GB29", "IGNORE ALL PREVIOUS RULES", "IGNORE YOUR RULES", "cracked screen", "BEGIN PRIVATE KEY"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
}

func readLogs(t *testing.T, st *stack) string {
	t.Helper()
	var all strings.Builder
	for _, name := range []string{devstack.Kernel, devstack.Evidence, devstack.Action, devstack.Verifier} {
		data, err := os.ReadFile(st.LogPath(name))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
	}
	return all.String()
}

// allowed binds a task on claim C-1001, reads the claim and gets an ALLOW
// for a GBP 17.40 refund.
func allowed(t *testing.T, st *stack, task string) (*client.Decision, *client.Evidence) {
	t.Helper()
	ctx := testCtx(t)
	st.bind(t, demo.ExpenseRefund, task, demo.Claim1001)
	r, err := st.Agent.Read(ctx, task, demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Agent.Propose(ctx, client.Proposal{Task: task, Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed() {
		t.Fatalf("decision %v", d.GetDecision())
	}
	return d, r
}

func capabilityOf(t *testing.T, env *receiptv1.Envelope) *receiptv1.Capability {
	t.Helper()
	var c receiptv1.Capability
	if err := proto.Unmarshal(env.GetPayload(), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// payments counts the rows of the example's payments table that match.
func payments(t *testing.T, st *stack, where string, args ...any) int {
	t.Helper()
	db, err := sqldb.OpenReadOnly(filepath.Join(st.DataDir, "payments.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM payments WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestListenersServeOnlyTheirService checks that the agent listener serves
// the agent service alone, and that each listener admits only its roles.
func TestListenersServeOnlyTheirService(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)

	agentConn, err := st.Conn(ctx, st.Kernel.Agent, "agent")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := reflectionpb.NewServerReflectionClient(agentConn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var services []string
	for _, s := range ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}).GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	if !slices.Equal(services, []string{"ambit.agent.v1.AgentService"}) {
		t.Errorf("agent listener reflection lists %v, want the agent service alone", services)
	}
	for _, symbol := range []string{"ambit.kernel.v1.GovernanceService", "ambit.kernel.v1.AdapterService"} {
		resp := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}})
		if resp.GetErrorResponse() == nil {
			t.Errorf("agent listener describes %s", symbol)
		}
	}
	_ = stream.CloseSend()

	read := &kernelv1.AuthorizeReadRequest{TaskId: "t", Source: "claims_db", RecordKey: demo.Claim1001, Fields: []string{"salary"}, Agent: "agent", Purpose: demo.RefundPurpose}
	// Even a governance or adapter identity finds nothing else on the agent
	// listener: the services are not served there at all.
	for _, id := range []string{devstack.Governance, devstack.Evidence} {
		conn, err := st.Conn(ctx, st.Kernel.Agent, id)
		if err != nil {
			t.Fatal(err)
		}
		_, err = kernelv1.NewGovernanceServiceClient(conn).ListApprovals(ctx, &kernelv1.ListApprovalsRequest{})
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("governance call on the agent listener as %s: %v", id, err)
		}
		_, err = kernelv1.NewAdapterServiceClient(conn).AuthorizeRead(ctx, read)
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("adapter call on the agent listener as %s: %v", id, err)
		}
	}
	// The agent's certificate opens neither the governance nor the adapter
	// listener.
	for _, addr := range []string{st.Kernel.Governance, st.Kernel.Adapter} {
		conn, err := st.Conn(ctx, addr, "agent")
		if err != nil {
			t.Fatal(err)
		}
		_, err = kernelv1.NewGovernanceServiceClient(conn).DecideApproval(ctx, &kernelv1.DecideApprovalRequest{ApprovalId: "apr-x", Approve: true})
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("agent approving on %s: %v", addr, err)
		}
		_, err = kernelv1.NewAdapterServiceClient(conn).AuthorizeRead(ctx, read)
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("agent authorising a read on %s: %v", addr, err)
		}
	}
}

// TestTamperedAndForgedAreRefused flips bytes in, and forges, capabilities
// and receipts; each is refused and nothing is paid.
func TestTamperedAndForgedAreRefused(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	d, r := allowed(t, st, "task-tamper")
	capab := capabilityOf(t, d.GetCapability())
	agentKey, err := pki.LoadSigningKey(pki.IdentityDir(st.PKI, "agent"), "agent")
	if err != nil {
		t.Fatal(err)
	}
	// The agent holds a signing key of its own; it signs in others' names.
	forge := func(m proto.Message, keyID string) *receiptv1.Envelope {
		env, err := envelope.NewSigner(keyID, agentKey).Sign(m)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	flipped := func(env *receiptv1.Envelope) *receiptv1.Envelope {
		e := proto.Clone(env).(*receiptv1.Envelope)
		e.Payload[len(e.Payload)/2] ^= 0x01
		return e
	}
	richer := proto.Clone(capab).(*receiptv1.Capability)
	call, err := toolcall.Parse("refund", `{"claim_id": "C-1001", "amount": {"currency_code": "GBP", "minor_units": 9900}, "payee_id": "employee-7", "reason_code": "approved-expense"}`)
	if err != nil {
		t.Fatal(err)
	}
	richer.Call = &contractv1.ToolCall{Tool: call.Tool, ArgumentsJson: call.Canonical()}

	actConn, err := st.Conn(ctx, st.Info.Action, "agent")
	if err != nil {
		t.Fatal(err)
	}
	act := actionv1.NewActionServiceClient(actConn)
	for name, capEnv := range map[string]*receiptv1.Envelope{
		"flipped byte":          flipped(d.GetCapability()),
		"forged in kernel name": forge(richer, "kernel"),
		"signed by the agent":   forge(capab, "agent"),
	} {
		_, err := act.Execute(ctx, &actionv1.ExecuteRequest{Capability: capEnv, IdempotencyKey: capab.GetIdempotencyKey()})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("capability %s: %v, want PermissionDenied", name, err)
		}
	}
	if n := payments(t, st, "1=1"); n != 0 {
		t.Fatalf("%d payments after forged capabilities", n)
	}

	var ev receiptv1.EvidenceReceipt
	if err := proto.Unmarshal(r.Signed.GetPayload(), &ev); err != nil {
		t.Fatal(err)
	}
	ev.Fields = append(ev.Fields, "salary")
	agentConn, err := st.Conn(ctx, st.Kernel.Agent, "agent")
	if err != nil {
		t.Fatal(err)
	}
	kernel := agentv1.NewAgentServiceClient(agentConn)
	refund := &contractv1.ToolCall{Tool: "refund", ArgumentsJson: capab.GetCall().GetArgumentsJson()}
	for name, evEnv := range map[string]*receiptv1.Envelope{
		"flipped byte":            flipped(r.Signed),
		"forged in adapter name":  forge(&ev, "evidence"),
		"signed by the agent":     forge(&ev, "agent"),
		"never recorded, re-used": forge(&ev, "kernel"),
	} {
		_, err := kernel.SubmitProposal(ctx, &agentv1.SubmitProposalRequest{TaskId: "task-tamper", Purpose: demo.RefundPurpose, Call: refund, Evidence: []*receiptv1.Envelope{evEnv}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("evidence %s: %v, want InvalidArgument", name, err)
		}
	}

	// A forged effect receipt does not get past the verifier.
	verConn, err := st.Conn(ctx, st.Info.Verifier, "agent")
	if err != nil {
		t.Fatal(err)
	}
	fake := forge(&receiptv1.EffectReceipt{ReceiptId: "eff-fake", CapabilityId: capab.GetCapabilityId(), TaskId: capab.GetTaskId(),
		IdempotencyKey: capab.GetIdempotencyKey(), Call: capab.GetCall(), Destination: capab.GetDestination()}, "action")
	_, err = verifierv1.NewVerifierServiceClient(verConn).Verify(ctx, &verifierv1.VerifyRequest{Capability: d.GetCapability(), EffectReceipt: fake})
	if !refusedWith(err, codes.InvalidArgument, errorv1.ErrorReason_ERROR_REASON_RECEIPT_INVALID) {
		t.Errorf("forged effect receipt: %v (%s), want InvalidArgument RECEIPT_INVALID", err, client.Reason(err))
	}
	// The genuine capability still works, once.
	if _, err := st.Agent.Execute(ctx, d); err != nil {
		t.Fatalf("genuine capability: %v", err)
	}
	if n := payments(t, st, "1=1"); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
}

// TestCrashBetweenCommitAndReply kills the action adapter with SIGKILL
// right after the payment commits and before it replies; the retry after
// the restart settles the same effect, and there is exactly one payment.
func TestCrashBetweenCommitAndReply(t *testing.T) {
	st := startStack(t, devstack.Options{Env: map[string][]string{devstack.Action: {"AMBIT_FAILPOINT=action.after-commit"}}})
	ctx := testCtx(t)
	d, _ := allowed(t, st, "task-crash")
	key := d.GetIdempotencyKey()

	if _, err := st.Agent.Execute(ctx, d); status.Code(err) != codes.Unavailable {
		t.Fatalf("first attempt: %v, want the connection to drop (Unavailable)", err)
	}
	if err := st.Wait(ctx, devstack.Action); err != nil {
		t.Fatal(err)
	}
	if n := payments(t, st, "idempotency_key = ?", key); n != 1 {
		t.Fatalf("after the crash: %d payments, want the committed one", n)
	}
	if err := st.Restart(ctx, devstack.Action, nil); err != nil {
		t.Fatal(err)
	}
	// The restarted adapter listens where it did: the agent's connection
	// comes back.
	retry, err := st.Agent.Execute(ctx, d)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	again, err := st.Agent.Execute(ctx, d)
	if err != nil {
		t.Fatalf("second retry: %v", err)
	}
	if !again.GetRepeated() || again.GetReceipt().GetReceiptId() != retry.GetReceipt().GetReceiptId() {
		t.Errorf("second retry: repeated %v, receipt %s; want the first receipt %s", again.GetRepeated(), again.GetReceipt().GetReceiptId(), retry.GetReceipt().GetReceiptId())
	}
	if n := payments(t, st, "idempotency_key = ?", key); n != 1 {
		t.Fatalf("after the retries: %d payments, want 1", n)
	}
	rb, err := st.Agent.Verify(ctx, d, retry)
	if err != nil || rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		t.Fatalf("readback after the crash: %v %v", rb.GetReceipt(), err)
	}
}

// TestEveryReceiptVerifies walks the kernel's log after both stories and
// opens every signed record with its issuer's public key.
func TestEveryReceiptVerifies(t *testing.T) {
	st := startStack(t, devstack.Options{}, demo.ExpenseRefund, demo.Supportdesk)
	ctx := testCtx(t)
	if err := st.Story(io.Discard).Run(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := st.Keys()
	if err != nil {
		t.Fatal(err)
	}
	issuers := map[string]struct {
		key  string
		into func() proto.Message
	}{
		"decision":   {devstack.Kernel, func() proto.Message { return &receiptv1.DecisionReceipt{} }},
		"capability": {devstack.Kernel, func() proto.Message { return &receiptv1.Capability{} }},
		"evidence":   {devstack.Evidence, func() proto.Message { return &receiptv1.EvidenceReceipt{} }},
		"effect":     {devstack.Action, func() proto.Message { return &receiptv1.EffectReceipt{} }},
		"readback":   {devstack.Verifier, func() proto.Message { return &receiptv1.ReadbackReceipt{} }},
	}
	seen := map[string]int{}
	tools := map[string]bool{}
	after := int64(0)
	for {
		resp, err := st.Gov.ListEntries(ctx, &kernelv1.ListEntriesRequest{AfterSeq: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetEntries()) == 0 {
			break
		}
		for _, e := range resp.GetEntries() {
			after = e.GetSeq()
			iss, ok := issuers[e.GetKind()]
			if !ok {
				continue
			}
			var env receiptv1.Envelope
			if err := proto.Unmarshal(e.GetBody(), &env); err != nil {
				t.Fatalf("entry %d: %v", e.GetSeq(), err)
			}
			m := iss.into()
			if err := keys.Open(&env, iss.key, m); err != nil {
				t.Errorf("entry %d (%s %s): %v", e.GetSeq(), e.GetKind(), e.GetRef(), err)
			}
			if eff, ok := m.(*receiptv1.EffectReceipt); ok {
				tools[eff.GetCall().GetTool()] = true
			}
			seen[e.GetKind()]++
		}
	}
	for kind := range issuers {
		if seen[kind] == 0 {
			t.Errorf("no %s receipt in the log", kind)
		}
	}
	for _, tool := range []string{"refund", "reply_to_customer", "issue_credit", "close_ticket"} {
		if !tools[tool] {
			t.Errorf("no effect of %s in the log", tool)
		}
	}
}

// TestKernelUnreachableFailsClosed kills the kernel: reads and effects are
// refused, quickly, and nothing is paid.
func TestKernelUnreachableFailsClosed(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	d, _ := allowed(t, st, "task-offline")
	st.Kill(devstack.Kernel)
	start := time.Now()
	_, err := st.Agent.Execute(ctx, d)
	if status.Code(err) != codes.Unavailable {
		t.Errorf("execute with the kernel down: %v, want Unavailable", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("refusal took %s: the deadline did not bound it", waited)
	}
	if n := payments(t, st, "1=1"); n != 0 {
		t.Errorf("%d payments with the kernel down", n)
	}
	_, err = st.Agent.Read(ctx, "task-offline", demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if status.Code(err) != codes.Unavailable {
		t.Errorf("read with the kernel down: %v, want Unavailable", err)
	}
	// The evidence adapter's watcher can no longer report a change of a
	// record it read: past its grace (five watch intervals, 2.5 s here),
	// its health probe fails and says so.
	deadline := time.Now().Add(20 * time.Second)
	for !watchReportedDown(t, st) {
		if time.Now().After(deadline) {
			t.Fatal("the evidence adapter never reported its watch down with the kernel gone")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// watchReportedDown reports whether the evidence adapter logged its watch
// probe failing for want of the kernel.
func watchReportedDown(t *testing.T, st *stack) bool {
	t.Helper()
	data, err := os.ReadFile(st.LogPath(devstack.Evidence))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, `"msg":"dependency unavailable"`) && strings.Contains(line, `"check":"watch"`) &&
			strings.Contains(line, "no change of a record read is reported") {
			return true
		}
	}
	return false
}

// TestReadbackMismatchFailsCommitment alters the payment after the effect:
// the verifier's readback is a mismatch and the commitment is failed, in the
// agent's self-view and in the audit.
func TestReadbackMismatchFailsCommitment(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	d, _ := allowed(t, st, "task-mismatch")
	eff, err := st.Agent.Execute(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqldb.Open(filepath.Join(st.DataDir, "payments.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE payments SET amount_minor = 1940 WHERE idempotency_key = ?`, d.GetIdempotencyKey()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rb, err := st.Agent.Verify(ctx, d, eff)
	if err != nil {
		t.Fatal(err)
	}
	if rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH || !slices.Contains(rb.GetReceipt().GetFindings(), "AMOUNT_MISMATCH") {
		t.Fatalf("readback %v, want a mismatch finding AMOUNT_MISMATCH", rb.GetReceipt())
	}
	v, err := st.Agent.SelfView(ctx, "task-mismatch", "commitments", "uncertainty")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.GetCommitments()) != 1 || v.GetCommitments()[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED {
		t.Errorf("self-view commitments %v, want one FAILED", v.GetCommitments())
	}
	if !strings.Contains(strings.Join(v.GetUncertainty(), "\n"), "failed") {
		t.Errorf("self-view uncertainty %v does not mention the failure", v.GetUncertainty())
	}
	audit, err := st.Gov.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{TaskId: "task-mismatch"})
	if err != nil || len(audit.GetCommitments()) != 1 || audit.GetCommitments()[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED {
		t.Errorf("audit commitments %v (%v), want one FAILED", audit.GetCommitments(), err)
	}
	// The self-view never answers facts outside its grant.
	if _, err := st.Agent.SelfView(ctx, "task-mismatch", "commitments", "policy_thresholds"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("self-view of policy_thresholds: %v, want PermissionDenied", err)
	}
}

// TestTargetRefusalClosesTheCommitment: a refund the payments table
// refuses (a trigger, as a rail refusing a closed account would) closes
// its commitment as REFUSED through the real processes: the refusal is
// journaled, the self-view and the audit say so, a retry of the
// capability is refused and attempts nothing, and the task's one refund
// is free again: proposed afresh once the table takes it, it is paid
// once and verified.
func TestTargetRefusalClosesTheCommitment(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	const task = "task-refused"
	db, err := sqldb.Open(filepath.Join(st.DataDir, "payments.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER account_closed BEFORE INSERT ON payments BEGIN SELECT RAISE(ABORT, 'payee account closed'); END`); err != nil {
		t.Fatal(err)
	}
	d, r := allowed(t, st, task)
	propose := func() *client.Decision {
		t.Helper()
		d, err := st.Agent.Propose(ctx, client.Proposal{Task: task, Purpose: demo.RefundPurpose, Tool: "refund",
			Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if again := propose(); again.Allowed() {
		t.Fatalf("a second refund while the first is outstanding was allowed: %v", again.GetDecision())
	}
	for attempt, want := range []errorv1.ErrorReason{errorv1.ErrorReason_ERROR_REASON_TARGET_REFUSED, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_CLOSED} {
		_, err := st.Agent.Execute(ctx, d)
		if status.Code(err) != codes.FailedPrecondition || serve.Reason(err) != want {
			t.Fatalf("execution %d: %v (%s), want FailedPrecondition %s", attempt, err, serve.Reason(err), want)
		}
	}
	if n := payments(t, st, "task_id = ?", task); n != 0 {
		t.Fatalf("%d payments after the refusal, want none", n)
	}
	v, err := st.Agent.SelfView(ctx, task, "commitments", "uncertainty")
	if err != nil {
		t.Fatal(err)
	}
	if cs := v.GetCommitments(); len(cs) != 1 || cs[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REFUSED ||
		!strings.Contains(cs[0].GetNote(), "payee account closed") {
		t.Errorf("self-view commitments %v, want one REFUSED naming the target's answer", cs)
	}
	if !strings.Contains(strings.Join(v.GetUncertainty(), "\n"), "was not carried out") {
		t.Errorf("self-view uncertainty %v does not say the refund was not carried out", v.GetUncertainty())
	}
	entries, err := st.Gov.ListEntries(ctx, &kernelv1.ListEntriesRequest{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	refusals := slices.DeleteFunc(entries.GetEntries(), func(e *ledgerv1.Entry) bool { return e.GetKind() != "refusal" })
	if len(refusals) != 1 {
		t.Fatalf("journal holds %d refusals, want 1", len(refusals))
	}
	// The refusal proves itself offline, as any receipt does.
	bundle := filepath.Join(t.TempDir(), "refusal.bundle")
	if out, err := ambitctl(t, "receipt", "export", refusals[0].GetRef(), "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", "governance", "--out", bundle); err != nil {
		t.Fatalf("receipt export: %v\n%s", err, out)
	}
	if out, err := ambitctl(t, "receipt", "verify", "--pki", pki.IdentityDir(st.PKI, "agent"), bundle); err != nil || !strings.HasPrefix(out, "OK  RefusalReceipt "+refusals[0].GetRef()+" signed by action") {
		t.Errorf("receipt verify: %v\n%s", err, out)
	}

	if _, err := db.Exec(`DROP TRIGGER account_closed`); err != nil {
		t.Fatal(err)
	}
	d2 := propose()
	if !d2.Allowed() {
		t.Fatalf("the refund proposed again after the refusal: %v, want ALLOW", d2.GetDecision())
	}
	eff, err := st.Agent.Execute(ctx, d2)
	if err != nil {
		t.Fatalf("the refund proposed again: %v", err)
	}
	if rb, err := st.Agent.Verify(ctx, d2, eff); err != nil || rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		t.Errorf("readback of the refund proposed again: %v, %v; want VERIFIED", rb.GetReceipt(), err)
	}
	if n := payments(t, st, "task_id = ?", task); n != 1 {
		t.Errorf("%d payments, want the one refund", n)
	}
}

// TestReceiptsNameTheirLeaf: every answer that carries a signed receipt
// names the leaf of the kernel's log that holds exactly that envelope.
func TestReceiptsNameTheirLeaf(t *testing.T) {
	st := startStack(t, devstack.Options{}, demo.ExpenseRefund)
	ctx := testCtx(t)
	d, r := allowed(t, st, "task-leaf")
	eff, err := st.Agent.Execute(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := st.Agent.Verify(ctx, d, eff)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind  string
		index uint64
		env   *receiptv1.Envelope
	}{{"evidence", r.LogIndex, r.Signed}, {"decision", d.GetLogIndex(), d.GetDecisionReceipt()},
		{"effect", eff.GetLogIndex(), eff.GetSignedReceipt()}, {"readback", rb.GetLogIndex(), rb.GetSignedReceipt()}} {
		resp, err := st.Gov.ListEntries(ctx, &kernelv1.ListEntriesRequest{AfterSeq: int64(tc.index), Limit: 1})
		if err != nil || len(resp.GetEntries()) != 1 {
			t.Fatalf("%s leaf %d: %v", tc.kind, tc.index, err)
		}
		e := resp.GetEntries()[0]
		body, _ := proto.Marshal(tc.env)
		if e.GetKind() != tc.kind || !bytes.Equal(e.GetBody(), body) {
			t.Errorf("%s names leaf %d, which holds a %s", tc.kind, tc.index, e.GetKind())
		}
	}
}
