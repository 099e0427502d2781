package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/gateway"
	"github.com/ambitkernel/ambit/examples/demo"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
)

// TestPerAgentSidecars runs one kernel and, for each of three agents, its
// own evidence adapter, action adapter, verifier and ambit-mcp, each with
// its own identity. Each agent's task works through its own sidecars (the
// third agent's through its MCP gateway); the first agent's sidecars
// cannot read, execute or read back for the second agent's task — neither
// when the second agent calls them nor when they call the kernel on their
// own — and no effect happens until the second agent acts through its own.
func TestPerAgentSidecars(t *testing.T) {
	st := startStack(t, devstack.Options{Agents: 3, Sidecars: devstack.PerAgentSidecars})
	ctx := testCtx(t)
	a, b, c := st.Agents[0], st.Agents[1], st.Agents[2]
	task := map[string]string{}
	e, _ := st.Example(demo.ExpenseRefund)
	for _, agent := range st.Agents {
		task[agent] = devstack.TaskName(agent)
		if _, err := demo.Bind(ctx, st.Gov, e, task[agent], demo.Claim1001, agent, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// Each sidecar is its own identity, bound to its agent in the kernel's
	// configuration; each gateway acts as its agent.
	kernelYAML, err := os.ReadFile(st.ConfigPath(devstack.Kernel))
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range st.Agents {
		for _, kind := range []string{devstack.Evidence, devstack.Action, devstack.Verifier} {
			name := devstack.SidecarName(kind, agent)
			if !strings.Contains(string(kernelYAML), name+": "+agent+"\n") {
				t.Errorf("kernel.yaml does not bind %s to %s:\n%s", name, agent, kernelYAML)
			}
			cfg, err := os.ReadFile(st.ConfigPath(name))
			if err != nil || !strings.Contains(string(cfg), "identity: "+name+"\n") {
				t.Errorf("%s.yaml (%v) does not give the identity %s", name, err, name)
			}
		}
		own := st.Sidecars[agent]
		if own.Evidence == "" || own.Action == "" || own.Verifier == "" || !strings.HasPrefix(own.MCP, "http://127.0.0.1:") || own.Task != task[agent] {
			t.Errorf("stack.json's sidecars of %s: %+v", agent, own)
		}
	}
	agentOf := func(identity, via string) *client.Agent {
		t.Helper()
		ag, err := st.AgentVia(ctx, identity, via)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ag.Close() })
		return ag
	}
	// A sidecar's own identity, straight at the kernel's adapter listener:
	// what a compromised sidecar could try.
	asSidecar := func(kind, agent string) (kernelv1.AdapterServiceClient, *envelope.Signer) {
		t.Helper()
		name := devstack.SidecarName(kind, agent)
		conn, err := st.Conn(ctx, st.Kernel.Adapter, name)
		if err != nil {
			t.Fatal(err)
		}
		key, err := pki.LoadSigningKey(pki.IdentityDir(st.PKI, name), name)
		if err != nil {
			t.Fatal(err)
		}
		return kernelv1.NewAdapterServiceClient(conn), envelope.NewSigner(name, key)
	}
	want := func(what string, err error, code codes.Code, reason errorv1.ErrorReason) {
		t.Helper()
		if !refusedWith(err, code, reason) {
			t.Errorf("%s: %v (%s), want %s %s", what, err, client.Reason(err), code, reason)
		}
	}

	// The first agent's task, through its own sidecars.
	ownA := agentOf(a, a)
	readA, err := ownA.Read(ctx, task[a], demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	if got := readA.Receipt.GetIssuer(); got != devstack.SidecarName(devstack.Evidence, a) {
		t.Errorf("the first agent's evidence is signed by %q", got)
	}
	out, err := ownA.Do(ctx, client.Proposal{Task: task[a], Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{readA}})
	if err != nil || out.Readback.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		t.Fatalf("the first agent's refund through its own sidecars: %+v, %v", out, err)
	}

	// The second agent reads and is allowed through its own sidecars, and
	// does not execute yet.
	ownB := agentOf(b, b)
	readB, err := ownB.Read(ctx, task[b], demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		t.Fatal(err)
	}
	decB, err := ownB.Propose(ctx, client.Proposal{Task: task[b], Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{readB}})
	if err != nil || !decB.Allowed() {
		t.Fatalf("the second agent's proposal: %v, %v", decB.GetDecision(), err)
	}
	capB := capabilityOf(t, decB.GetCapability())

	// Evidence: the first agent's evidence adapter does not read for the
	// second agent's task, whoever asks it.
	bViaA := agentOf(b, a)
	_, err = bViaA.Read(ctx, task[b], demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	want("the second agent reading through the first's evidence adapter", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_TASK_OTHER_AGENT)
	evA, evASigner := asSidecar(devstack.Evidence, a)
	_, err = evA.AuthorizeRead(ctx, &kernelv1.AuthorizeReadRequest{TaskId: task[b], Agent: b, Purpose: demo.RefundPurpose,
		Source: "claims_db", RecordKey: demo.Claim1001, Fields: demo.ClaimFields})
	want("the first agent's evidence adapter authorising a read for the second's task", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_TASK_OTHER_AGENT)
	forged := proto.Clone(readB.Receipt).(*receiptv1.EvidenceReceipt)
	forged.ReceiptId, forged.Issuer, forged.ReadAt = forged.GetReceiptId()+"-again", evASigner.KeyID(), timestamppb.Now()
	signed, err := evASigner.Sign(forged)
	if err != nil {
		t.Fatal(err)
	}
	_, err = evA.RecordEvidence(ctx, &kernelv1.RecordEvidenceRequest{Receipt: signed})
	want("the first agent's evidence adapter recording evidence for the second's task", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_TASK_OTHER_AGENT)

	// Action: the first agent's action adapter does not execute the second
	// agent's capability, whoever presents it, and the kernel refuses its
	// redemption by that adapter's identity.
	_, err = bViaA.Execute(ctx, decB)
	want("the second agent executing through the first's action adapter", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_NOT_HOLDER)
	_, err = ownA.Execute(ctx, decB)
	want("the first agent presenting the second's capability", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_NOT_HOLDER)
	actA, actASigner := asSidecar(devstack.Action, a)
	_, err = actA.RedeemCapability(ctx, &kernelv1.RedeemCapabilityRequest{Capability: decB.GetCapability(), IdempotencyKey: capB.GetIdempotencyKey()})
	want("the first agent's action adapter redeeming the second's capability", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_NOT_HOLDER)
	fakeEffect, err := actASigner.Sign(&receiptv1.EffectReceipt{ReceiptId: "eff-cross", CapabilityId: capB.GetCapabilityId(), TaskId: task[b],
		IdempotencyKey: capB.GetIdempotencyKey(), Call: capB.GetCall(), Destination: capB.GetDestination(),
		ExecutedAt: timestamppb.Now(), Issuer: actASigner.KeyID()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = actA.RecordEffect(ctx, &kernelv1.RecordEffectRequest{Receipt: fakeEffect})
	want("the first agent's action adapter recording an effect of the second's capability", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_NOT_HOLDER)
	if n := payments(t, st, "task_id = ?", task[b]); n != 0 {
		t.Fatalf("%d payments for the second agent's task after the refusals", n)
	}

	// Through its own action adapter the capability is still redeemed for
	// the first time: the refusals changed nothing.
	effB, err := ownB.Execute(ctx, decB)
	if err != nil || effB.GetRepeated() {
		t.Fatalf("the second agent executing through its own action adapter: %+v, %v", effB, err)
	}
	if n := payments(t, st, "task_id = ?", task[b]); n != 1 {
		t.Fatalf("%d payments for the second agent's task, want 1", n)
	}

	// Verifier: the first agent's verifier trusts only the first agent's
	// action adapter, and the kernel refuses it a readback of the second
	// agent's capability.
	_, err = bViaA.Verify(ctx, decB, effB)
	want("the second agent's effect at the first's verifier", err, codes.InvalidArgument, errorv1.ErrorReason_ERROR_REASON_RECEIPT_INVALID)
	verA, verASigner := asSidecar(devstack.Verifier, a)
	fakeReadback, err := verASigner.Sign(&receiptv1.ReadbackReceipt{ReceiptId: "rb-cross", CapabilityId: capB.GetCapabilityId(),
		EffectReceiptId: effB.GetReceipt().GetReceiptId(), TaskId: task[b], IdempotencyKey: capB.GetIdempotencyKey(),
		Status: receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED, RecordsFound: 1, ReadAt: timestamppb.Now(), Issuer: verASigner.KeyID()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = verA.RecordReadback(ctx, &kernelv1.RecordReadbackRequest{Receipt: fakeReadback})
	want("the first agent's verifier recording a readback of the second's capability", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_NOT_HOLDER)
	rbB, err := ownB.Verify(ctx, decB, effB)
	if err != nil || rbB.GetReceipt().GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED || rbB.GetReceipt().GetIssuer() != devstack.SidecarName(devstack.Verifier, b) {
		t.Fatalf("the second agent's readback through its own verifier: %+v, %v", rbB.GetReceipt(), err)
	}

	// The agent listener: the first agent sees and proposes nothing on the
	// second agent's task.
	_, err = ownA.SelfView(ctx, task[b], "capabilities")
	want("the first agent's self-view of the second's task", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_TASK_OTHER_AGENT)
	_, err = ownA.Propose(ctx, client.Proposal{Task: task[b], Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{readA}})
	want("the first agent proposing on the second's task", err, codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_TASK_OTHER_AGENT)

	// The third agent's task, through its own MCP gateway.
	cs := connectMCP(t, ctx, &mcp.StreamableClientTransport{Endpoint: st.Sidecars[c].MCP, DisableStandaloneSSE: true})
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("the third agent's gateway lists no tools: %v", err)
	}
	read := callTool(t, ctx, cs, "read_claims_db", map[string]any{"record_key": demo.Claim1001, "fields": demo.ClaimFields})
	if read.IsError {
		t.Fatalf("the third agent's read through its gateway: %s", resultText(read))
	}
	refund := callTool(t, ctx, cs, "refund", demo.Refund(demo.Claim1001, 1740, demo.Claimant))
	if refund.IsError || refund.Meta[gateway.MetaOutcome] != "ALLOW" || refund.Meta[gateway.MetaReadbackStatus] != "VERIFIED" {
		t.Fatalf("the third agent's refund through its gateway: %v %s", refund.Meta, resultText(refund))
	}
	// A gateway with the first agent's identity set on the third agent's
	// task lists nothing and does nothing.
	cross := filepath.Join(t.TempDir(), "mcp-cross.yaml")
	cfg, err := os.ReadFile(st.ConfigPath(devstack.SidecarName(devstack.MCP, a)))
	if err != nil {
		t.Fatal(err)
	}
	crossCfg := strings.Replace(string(cfg), "task_id: "+task[a]+"\n", "task_id: "+task[c]+"\n", 1)
	if crossCfg == string(cfg) {
		t.Fatalf("no task_id %s in the first agent's gateway configuration:\n%s", task[a], cfg)
	}
	if err := os.WriteFile(cross, []byte(crossCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	other := connectMCP(t, ctx, &mcp.CommandTransport{Command: exec.Command(filepath.Join(binDir, "ambit-mcp"), "--config", cross, "--stdio")})
	if _, err := other.ListTools(ctx, nil); err == nil || !strings.Contains(err.Error(), "ERROR_REASON_TASK_OTHER_AGENT") {
		t.Errorf("the first agent's gateway on the third agent's task lists: %v", err)
	}
	if res, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "refund", Arguments: demo.Refund(demo.Claim1001, 1740, demo.Claimant)}); err == nil && !res.IsError {
		t.Errorf("the first agent's gateway on the third agent's task called refund: %v", res.Meta)
	}

	// Exactly one payment per task, each by its own agent's action adapter.
	for _, agent := range st.Agents {
		if n := payments(t, st, "task_id = ?", task[agent]); n != 1 {
			t.Errorf("%d payments for %s's task, want 1", n, agent)
		}
	}
	if n := payments(t, st, "1=1"); n != 3 {
		t.Errorf("%d payments in all, want 3", n)
	}
}

// connectMCP connects an MCP client over the transport, closed when the
// test ends.
func connectMCP(t *testing.T, ctx context.Context, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}
