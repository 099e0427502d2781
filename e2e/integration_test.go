package e2e_test

import (
	"bytes"
	"database/sql"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/e2e/cluster"
	"github.com/ambitkernel/ambit/e2e/demo"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"google.golang.org/grpc/codes"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite"
)

// TestDemoStory runs the whole story (a)–(f) against the real processes and
// then checks what the processes logged: a line per decision, effect and
// readback, and never an evidence value.
func TestDemoStory(t *testing.T) {
	c, k := startCluster(t, cluster.Options{})
	ctx := testCtx(t)
	var out bytes.Buffer
	s := &demo.Story{C: c, K: k, Ambitctl: binDir + "/ambitctl", Out: &out}
	if err := s.Run(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	logs := readLogs(t, c)
	for _, want := range []string{`"msg":"decision"`, `"msg":"effect"`, `"msg":"readback"`, `"msg":"evidence"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s line in the logs", want)
		}
	}
	for _, secret := range []string{"FAKE", "GB29", "IGNORE ALL PREVIOUS RULES", "BEGIN PRIVATE KEY"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
}

func readLogs(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	var all strings.Builder
	for _, name := range []string{cluster.Kernel, cluster.Evidence, cluster.Action, cluster.Verifier} {
		data, err := os.ReadFile(c.LogPath(name))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
	}
	return all.String()
}

// allowed binds a task for claim C-1001, reads it and gets an ALLOW.
func allowed(t *testing.T, c *cluster.Cluster, k *demo.Clients, task string) (*contractv1.Action, *agentv1.SubmitProposalResponse, *evidencev1.ReadResponse) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := demo.BindRefundTask(ctx, k.Governance, task, claims.DemoClaim1001, time.Now()); err != nil {
		t.Fatal(err)
	}
	r, err := k.Evidence.Read(ctx, &evidencev1.ReadRequest{TaskId: task, Source: "claims_db", RecordKey: claims.DemoClaim1001, Fields: demo.ClaimFields})
	if err != nil {
		t.Fatal(err)
	}
	a := demo.Refund(claims.DemoClaim1001, 1740, claims.DemoClaimant)
	d, err := k.Agent.SubmitProposal(ctx, &agentv1.SubmitProposalRequest{TaskId: task, Purpose: "expense-refund", Action: a, Evidence: []*receiptv1.Envelope{r.GetSignedReceipt()}})
	if err != nil {
		t.Fatal(err)
	}
	if d.GetDecision().GetOutcome() != contractv1.Outcome_OUTCOME_ALLOW {
		t.Fatalf("decision %v", d.GetDecision())
	}
	return a, d, r
}

func capabilityOf(t *testing.T, env *receiptv1.Envelope) *receiptv1.Capability {
	t.Helper()
	var c receiptv1.Capability
	if err := proto.Unmarshal(env.GetPayload(), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func payments(t *testing.T, c *cluster.Cluster, where string, args ...any) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+c.PaymentsDB+"?mode=ro")
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
	c, _ := startCluster(t, cluster.Options{})
	ctx := testCtx(t)

	agentConn, err := c.Conn(ctx, c.KernelAgent, "agent")
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

	// Even a governance or adapter identity finds nothing else on the agent
	// listener: the services are not served there at all.
	for _, id := range []string{"governance", "evidence"} {
		conn, err := c.Conn(ctx, c.KernelAgent, id)
		if err != nil {
			t.Fatal(err)
		}
		_, err = kernelv1.NewGovernanceServiceClient(conn).ListApprovals(ctx, &kernelv1.ListApprovalsRequest{})
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("governance call on the agent listener as %s: %v", id, err)
		}
		_, err = kernelv1.NewAdapterServiceClient(conn).AuthorizeRead(ctx, &kernelv1.AuthorizeReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-1001", Fields: []string{"salary"}})
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("adapter call on the agent listener as %s: %v", id, err)
		}
	}
	// The agent's certificate opens neither the governance nor the adapter
	// listener.
	for _, addr := range []string{c.KernelGovernance, c.KernelAdapter} {
		conn, err := c.Conn(ctx, addr, "agent")
		if err != nil {
			t.Fatal(err)
		}
		_, err = kernelv1.NewGovernanceServiceClient(conn).DecideApproval(ctx, &kernelv1.DecideApprovalRequest{ApprovalId: "apr-x", Approve: true})
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("agent approving on %s: %v", addr, err)
		}
		_, err = kernelv1.NewAdapterServiceClient(conn).AuthorizeRead(ctx, &kernelv1.AuthorizeReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-1001", Fields: []string{"salary"}})
		if code := status.Code(err); code != codes.PermissionDenied && code != codes.Unimplemented {
			t.Errorf("agent authorising a read on %s: %v", addr, err)
		}
	}
}

// TestTamperedAndForgedAreRefused flips bytes in, and forges, capabilities
// and receipts; each is refused and nothing is paid.
func TestTamperedAndForgedAreRefused(t *testing.T) {
	c, k := startCluster(t, cluster.Options{})
	ctx := testCtx(t)
	a, d, r := allowed(t, c, k, "task-tamper")
	capab := capabilityOf(t, d.GetCapability())
	agentKey, err := pki.LoadSigningKey(pki.IdentityDir(c.PKI, "agent"), "agent")
	if err != nil {
		t.Fatal(err)
	}
	// The agent holds a signing key of its own; it signs in the kernel's name.
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
	richer.Action = demo.Refund(claims.DemoClaim1001, 9900, claims.DemoClaimant)

	for name, capEnv := range map[string]*receiptv1.Envelope{
		"flipped byte":          flipped(d.GetCapability()),
		"forged in kernel name": forge(richer, "kernel"),
		"signed by the agent":   forge(capab, "agent"),
	} {
		_, err := k.Action.Execute(ctx, &actionv1.ExecuteRequest{Capability: capEnv, Action: a, IdempotencyKey: capab.GetIdempotencyKey()})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("capability %s: %v, want PermissionDenied", name, err)
		}
	}
	if n := payments(t, c, "1=1"); n != 0 {
		t.Fatalf("%d payments after forged capabilities", n)
	}

	var ev receiptv1.EvidenceReceipt
	_ = proto.Unmarshal(r.GetSignedReceipt().GetPayload(), &ev)
	ev.Fields = append(ev.Fields, "salary")
	for name, evEnv := range map[string]*receiptv1.Envelope{
		"flipped byte":            flipped(r.GetSignedReceipt()),
		"forged in adapter name":  forge(&ev, "evidence"),
		"signed by the agent":     forge(&ev, "agent"),
		"never recorded, re-used": forge(&ev, "kernel"),
	} {
		_, err := k.Agent.SubmitProposal(ctx, &agentv1.SubmitProposalRequest{TaskId: "task-tamper", Purpose: "expense-refund", Action: a, Evidence: []*receiptv1.Envelope{evEnv}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("evidence %s: %v, want InvalidArgument", name, err)
		}
	}

	// A forged effect receipt does not get past the verifier.
	fake := forge(&receiptv1.EffectReceipt{ReceiptId: "eff-fake", CapabilityId: capab.GetCapabilityId(), IdempotencyKey: capab.GetIdempotencyKey(), Action: a}, "action")
	if _, err := k.Verifier.Verify(ctx, &verifierv1.VerifyRequest{Capability: d.GetCapability(), EffectReceipt: fake}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("forged effect receipt: %v, want PermissionDenied", err)
	}
	// The genuine capability still works, once.
	if _, err := k.Action.Execute(ctx, &actionv1.ExecuteRequest{Capability: d.GetCapability(), Action: a, IdempotencyKey: capab.GetIdempotencyKey()}); err != nil {
		t.Fatalf("genuine capability: %v", err)
	}
	if n := payments(t, c, "1=1"); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
}

// TestCrashBetweenCommitAndReply kills the action adapter with SIGKILL
// right after the payment commits and before it replies; the retry after
// restart returns the first receipt and there is exactly one payment.
func TestCrashBetweenCommitAndReply(t *testing.T) {
	c, k := startCluster(t, cluster.Options{Env: map[string][]string{cluster.Action: {"AMBIT_FAILPOINT=action.after-commit"}}})
	ctx := testCtx(t)
	a, d, _ := allowed(t, c, k, "task-crash")
	capab := capabilityOf(t, d.GetCapability())
	req := &actionv1.ExecuteRequest{Capability: d.GetCapability(), Action: a, IdempotencyKey: capab.GetIdempotencyKey()}

	if _, err := k.Action.Execute(ctx, req); status.Code(err) != codes.Unavailable {
		t.Fatalf("first attempt: %v, want the connection to drop (Unavailable)", err)
	}
	if err := c.Wait(ctx, cluster.Action); err != nil {
		t.Fatal(err)
	}
	if n := payments(t, c, "idempotency_key = ?", capab.GetIdempotencyKey()); n != 1 {
		t.Fatalf("after the crash: %d payments, want the committed one", n)
	}
	if err := c.Restart(ctx, cluster.Action, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Conn(ctx, c.ActionAddr, "agent")
	if err != nil {
		t.Fatal(err)
	}
	retry, err := actionv1.NewActionServiceClient(conn).Execute(ctx, req)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !retry.GetRepeated() {
		t.Error("retry was not marked as repeating the first effect")
	}
	if n := payments(t, c, "idempotency_key = ?", capab.GetIdempotencyKey()); n != 1 {
		t.Fatalf("after the retry: %d payments, want 1", n)
	}
	vconn, err := c.Conn(ctx, c.VerifierAddr, "agent")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := verifierv1.NewVerifierServiceClient(vconn).Verify(ctx, &verifierv1.VerifyRequest{Capability: d.GetCapability(), EffectReceipt: retry.GetSignedReceipt()})
	if err != nil || rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		t.Fatalf("readback after the crash: %v %v", rb.GetReceipt(), err)
	}
	// The same key with a different effect is refused.
	other := proto.Clone(req).(*actionv1.ExecuteRequest)
	other.Action = demo.Refund(claims.DemoClaim1001, 1741, claims.DemoClaimant)
	if _, err := actionv1.NewActionServiceClient(conn).Execute(ctx, other); status.Code(err) != codes.InvalidArgument {
		t.Errorf("same key, different effect: %v, want InvalidArgument", err)
	}
}

// TestEveryReceiptVerifies walks the kernel's log after the story and opens
// every signed record with its issuer's public key.
func TestEveryReceiptVerifies(t *testing.T) {
	c, k := startCluster(t, cluster.Options{})
	ctx := testCtx(t)
	s := &demo.Story{C: c, K: k, Ambitctl: binDir + "/ambitctl", Out: io.Discard}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys()
	if err != nil {
		t.Fatal(err)
	}
	issuers := map[string]struct {
		key  string
		into func() proto.Message
	}{
		"decision":   {cluster.Kernel, func() proto.Message { return &receiptv1.DecisionReceipt{} }},
		"capability": {cluster.Kernel, func() proto.Message { return &receiptv1.Capability{} }},
		"evidence":   {cluster.Evidence, func() proto.Message { return &receiptv1.EvidenceReceipt{} }},
		"effect":     {cluster.Action, func() proto.Message { return &receiptv1.EffectReceipt{} }},
		"readback":   {cluster.Verifier, func() proto.Message { return &receiptv1.ReadbackReceipt{} }},
	}
	seen := map[string]int{}
	after := int64(0)
	for {
		resp, err := k.Governance.ListEntries(ctx, &kernelv1.ListEntriesRequest{AfterSeq: after, Limit: 100})
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
			if err := keys.Open(&env, iss.key, iss.into()); err != nil {
				t.Errorf("entry %d (%s %s): %v", e.GetSeq(), e.GetKind(), e.GetRef(), err)
			}
			seen[e.GetKind()]++
		}
	}
	for kind := range issuers {
		if seen[kind] == 0 {
			t.Errorf("no %s receipt in the log", kind)
		}
	}
}

// TestKernelUnreachableFailsClosed stops the kernel: reads and effects are
// refused and nothing is paid.
func TestKernelUnreachableFailsClosed(t *testing.T) {
	c, k := startCluster(t, cluster.Options{})
	ctx := testCtx(t)
	a, d, _ := allowed(t, c, k, "task-offline")
	capab := capabilityOf(t, d.GetCapability())
	c.Kill(cluster.Kernel)
	start := time.Now()
	_, err := k.Action.Execute(ctx, &actionv1.ExecuteRequest{Capability: d.GetCapability(), Action: a, IdempotencyKey: capab.GetIdempotencyKey()})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("execute with the kernel down: %v, want Unavailable", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("refusal took %s: the deadline did not bound it", waited)
	}
	if n := payments(t, c, "1=1"); n != 0 {
		t.Errorf("%d payments with the kernel down", n)
	}
	_, err = k.Evidence.Read(ctx, &evidencev1.ReadRequest{TaskId: "task-offline", Source: "claims_db", RecordKey: claims.DemoClaim1001, Fields: demo.ClaimFields})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("read with the kernel down: %v, want Unavailable", err)
	}
}

// TestReadbackMismatchFailsCommitment alters the payment after the effect:
// the verifier's readback is a mismatch and the commitment is failed, in the
// agent's self-view and in the audit.
func TestReadbackMismatchFailsCommitment(t *testing.T) {
	c, k := startCluster(t, cluster.Options{})
	ctx := testCtx(t)
	a, d, _ := allowed(t, c, k, "task-mismatch")
	capab := capabilityOf(t, d.GetCapability())
	eff, err := k.Action.Execute(ctx, &actionv1.ExecuteRequest{Capability: d.GetCapability(), Action: a, IdempotencyKey: capab.GetIdempotencyKey()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+c.PaymentsDB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE payments SET amount_minor = 1940 WHERE idempotency_key = ?`, capab.GetIdempotencyKey()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rb, err := k.Verifier.Verify(ctx, &verifierv1.VerifyRequest{Capability: d.GetCapability(), EffectReceipt: eff.GetSignedReceipt()})
	if err != nil {
		t.Fatal(err)
	}
	if rb.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH || len(rb.GetReceipt().GetFindings()) == 0 {
		t.Fatalf("readback %v, want a mismatch with findings", rb.GetReceipt())
	}
	v, err := k.Agent.GetSelfView(ctx, &agentv1.GetSelfViewRequest{TaskId: "task-mismatch", Facts: []string{"commitments", "uncertainty"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.GetCommitments()) != 1 || v.GetCommitments()[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED {
		t.Errorf("self-view commitments %v, want one FAILED", v.GetCommitments())
	}
	if !strings.Contains(strings.Join(v.GetUncertainty(), "\n"), "failed") {
		t.Errorf("self-view uncertainty %v does not mention the failure", v.GetUncertainty())
	}
	audit, err := k.Governance.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{TaskId: "task-mismatch"})
	if err != nil || len(audit.GetCommitments()) != 1 || audit.GetCommitments()[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED {
		t.Errorf("audit commitments %v (%v), want one FAILED", audit.GetCommitments(), err)
	}
	// The self-view never answers facts outside its grant.
	if _, err := k.Agent.GetSelfView(ctx, &agentv1.GetSelfViewRequest{TaskId: "task-mismatch", Facts: []string{"commitments", "policy_thresholds"}}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("self-view of policy_thresholds: %v, want PermissionDenied", err)
	}
}
