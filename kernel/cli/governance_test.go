package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/kernel/cli"
	"github.com/ambitkernel/ambit/kernel/server"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

// kernel starts a real kernel in process on loopback ports, with a dev
// PKI whose policy-owner may promote task-scoped items, and returns the
// PKI's root and its listeners' addresses.
func kernel(t *testing.T) (string, map[string]string) {
	t.Helper()
	root := servicetest.PKI(t)
	cfg := servicetest.WriteFile(t, "kernel.yaml", fmt.Sprintf(`
identity: kernel
pki_dir: %s
database: %s
log_level: error
listen: {agent: "127.0.0.1:0", adapter: "127.0.0.1:0", governance: "127.0.0.1:0"}
peers: {evidence: [evidence], action: [action], verifier: [verifier]}
promotion_authorities: {SCOPE_TASK: [policy-owner]}
`, pki.IdentityDir(root, "kernel"), filepath.Join(t.TempDir(), "kernel.db")))
	k := servicetest.Start(t, server.Run, "--config", cfg)
	return root, k.Addrs
}

// home gives the test a home folder of its own, where the contexts are
// kept.
func home(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", "")
	return dir
}

// scrub replaces what differs between runs (random identifiers, instants,
// ports, temporary folders) so that outputs can be golden files. An
// identifier or an instant keeps its width, and tables their alignment.
func scrub(out string, replace map[string]string) string {
	for from, to := range replace {
		out = strings.ReplaceAll(out, from, to)
	}
	// The template's own expiry is the same every run.
	out = strings.ReplaceAll(out, "2030-01-01T00:00:00Z", "<template's valid_until>")
	out = regexp.MustCompile(`\b(cap|dec|ev|apr|eff|rb)-[0-9a-f]{24}\b`).ReplaceAllString(out, "$1-xxxxxxxxxxxxxxxxxxxxxxxx")
	out = regexp.MustCompile(`20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(out, "YYYY-MM-DDThh:mm:ssZ")
	out = regexp.MustCompile(`20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z`).ReplaceAllString(out, "YYYY-MM-DDThh:mm:ss.fZ")
	return strings.ReplaceAll(out, "<template's valid_until>", "2030-01-01T00:00:00Z")
}

// TestGovernanceCommands: a contract template proposed, promoted by
// another identity and bound, the task listed, approvals asked for,
// listed a page at a time and approved, an allowed call's commitment and
// the journal's entries, against a real kernel, through a stored context;
// text and JSON.
func TestGovernanceCommands(t *testing.T) {
	dir := home(t)
	root, addrs := kernel(t)
	gov := addrs["governance"]
	replace := map[string]string{gov: "<kernel>", root: "<pki>", dir: "<home>"}
	template := filepath.Join("..", "..", "examples", "expense-refund", "contract.yaml")
	step := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return scrub(out, replace)
	}

	var transcript strings.Builder
	record := func(args ...string) string {
		out := step(t, args...)
		fmt.Fprintf(&transcript, "$ ambitctl %s\n%s\n", scrub(strings.Join(args, " "), replace), out)
		return out
	}
	record("context", "list")
	record("context", "set", "local", "--kernel", gov, "--pki", root, "--as", "governance")
	record("context", "set", "owner", "--kernel", gov, "--pki", root, "--as", "policy-owner")
	record("context", "list")
	// A contract item claims its owner's authority: the policy owner
	// proposes and promotes it, by a flag or by its context; the
	// governance identity binds.
	record("contract", "propose", template, "--id", "CTR-refund-1", "--task", "refund-1", "--record-key", "C-1001", "--provenance", "policy-repo:expense-refund@1", "--as", "policy-owner")
	record("contract", "promote", "CTR-refund-1", "--context", "owner")
	record("contract", "bind", "CTR-refund-1", "--task", "refund-1", "--agent", "agent")
	// A second task, proposed and bound but not promoted.
	record("contract", "propose", template, "--id", "CTR-refund-2", "--task", "refund-2", "--record-key", "C-1002", "--valid-for", "4h", "--context", "owner")
	record("contract", "bind", "CTR-refund-2", "--task", "refund-2", "--agent", "agent-b")
	record("tasks")
	record("tasks", "--agent", "agent-b")
	// A page's "more:" line is the same query, with its filters and its
	// limit, from where the page ended: followed, it prints the rest.
	record(more(t, record("tasks", "--limit", "1", "--format", "text"))...)
	record("commitments")
	// Two refunds above the approval threshold ask for approvals, which
	// are listed a page at a time; one approved is listed as approved.
	receipt := read(t, root, addrs, "refund-1")
	record("approvals")
	propose(t, root, addrs, "refund-1", receipt, 6000, contractv1.Outcome_OUTCOME_REVIEW)
	// Identifiers begin with their millisecond, then are random: the
	// second approval is asked for in a later millisecond, to be listed
	// second.
	time.Sleep(2 * time.Millisecond)
	propose(t, root, addrs, "refund-1", receipt, 6100, contractv1.Outcome_OUTCOME_REVIEW)
	// The transcript's identifiers are scrubbed: follow the page's own.
	page, err := run(t, "approvals", "--limit", "1")
	if err != nil {
		t.Fatal(err)
	}
	record("approvals", "--limit", "1")
	record(more(t, page)...)
	record("approve", regexp.MustCompile(`apr-[0-9a-f]{24}`).FindString(page), "--note", "checked")
	record("approvals", "--state", "approved")
	record("approvals")
	propose(t, root, addrs, "refund-1", receipt, 1740, contractv1.Outcome_OUTCOME_ALLOW)
	record("commitments", "--task", "refund-1")
	record("receipts", "--kind", "task.bind,capability", "--kind", "decision")
	record(more(t, record("receipts", "--after", "2", "--limit", "2"))...)
	record(more(t, record("receipts", "--kind", "task.bind", "--limit", "1"))...)
	golden(t, "governance.txt", transcript.String())

	jsonOut := step(t, "tasks", "--format", "json")
	golden(t, "tasks.json", jsonOut)
	var tasks struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &tasks); err != nil || len(tasks.Tasks) != 2 {
		t.Errorf("tasks --format json: %v, %+v", err, tasks)
	}
	for _, args := range [][]string{
		{"contract", "promote", "CTR-refund-2", "--format", "json", "--as", "policy-owner"},
		{"commitments", "--format", "json"},
		{"receipts", "--format", "json", "--kind", "capability"},
		{"context", "list", "--format", "json"},
	} {
		var v map[string]any
		if err := json.Unmarshal([]byte(step(t, args...)), &v); err != nil || len(v) == 0 {
			t.Errorf("%q: not a JSON object: %v", args, err)
		}
	}
	// The promotion above made refund-2's contract CANONICAL.
	if out := step(t, "tasks", "--contract", "CTR-refund-2"); !strings.Contains(out, "CANONICAL") {
		t.Errorf("tasks after the promotion:\n%s", out)
	}
}

// more returns the arguments of the "more:" line that ends out.
func more(t *testing.T, out string) []string {
	t.Helper()
	_, line, ok := strings.Cut(out, "more: ambitctl ")
	if !ok {
		t.Fatalf("no more: line in\n%s", out)
	}
	return strings.Fields(line)
}

// read records an authorised read of claim C-1001 for task, as the
// evidence adapter would, and returns its signed receipt.
func read(t *testing.T, root string, addrs map[string]string, task string) *receiptv1.Envelope {
	t.Helper()
	key, err := pki.LoadSigningKey(pki.IdentityDir(root, "evidence"), "evidence")
	if err != nil {
		t.Fatal(err)
	}
	values, err := structpb.NewStruct(map[string]any{"claim_id": "C-1001", "claimant_id": "employee-7", "receipt_total": "17.40"})
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{"claim_id", "claimant_id", "receipt_total"}
	var receipt *receiptv1.Envelope
	err = servicetest.Call(t, root, "evidence", pki.RoleKernel, addrs["adapter"], func(ctx context.Context, conn *grpc.ClientConn) error {
		c := kernelv1.NewAdapterServiceClient(conn)
		if _, err := c.AuthorizeRead(ctx, &kernelv1.AuthorizeReadRequest{TaskId: task, Source: "claims_db", RecordKey: "C-1001",
			Fields: fields, Agent: "agent", Purpose: "expense-refund"}); err != nil {
			return err
		}
		receipt, err = envelope.NewSigner("evidence", key).Sign(&receiptv1.EvidenceReceipt{
			ReceiptId: "ev-0123456789abcdef01234567", TaskId: task, Source: "claims_db", RecordKey: "C-1001", Fields: fields,
			StateVersion: "claims-v42", Subject: "employee-7", ReadAt: timestamppb.Now(), ContentHash: "sha256:0f1e2d",
			Provenance: contractv1.Provenance_PROVENANCE_TRUSTED, Issuer: "evidence", Values: values,
		})
		if err != nil {
			return err
		}
		_, err = c.RecordEvidence(ctx, &kernelv1.RecordEvidenceRequest{Receipt: receipt})
		return err
	})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return receipt
}

// propose submits, as the agent, a refund of minor pence of claim C-1001
// to its claimant citing receipt, and wants the outcome want.
func propose(t *testing.T, root string, addrs map[string]string, task string, receipt *receiptv1.Envelope, minor int, want contractv1.Outcome) {
	t.Helper()
	err := servicetest.Call(t, root, "agent", pki.RoleKernel, addrs["agent"], func(ctx context.Context, conn *grpc.ClientConn) error {
		resp, err := agentv1.NewAgentServiceClient(conn).SubmitProposal(ctx, &agentv1.SubmitProposalRequest{
			TaskId: task, Purpose: "expense-refund", Evidence: []*receiptv1.Envelope{receipt},
			Call: &contractv1.ToolCall{Tool: "refund", ArgumentsJson: fmt.Sprintf(`{"claim_id": "C-1001", "amount": {"currency_code": "GBP", "minor_units": %d}, "payee_id": "employee-7", "reason_code": "approved-expense"}`, minor)},
		})
		if err == nil && resp.GetDecision().GetOutcome() != want {
			err = fmt.Errorf("decision %v, want %s", resp.GetDecision(), want)
		}
		return err
	})
	if err != nil {
		t.Fatalf("propose: %v", err)
	}
}

// TestGovernanceErrors: bad command lines change nothing and say why; a
// kernel's refusal names the call.
func TestGovernanceErrors(t *testing.T) {
	home(t)
	root, addrs := kernel(t)
	gov := addrs["governance"]
	template := filepath.Join("..", "..", "examples", "expense-refund", "contract.yaml")
	flags := []string{"--kernel", gov, "--pki", root}
	tests := []struct {
		name    string
		args    []string
		wantErr error
		wantMsg string
	}{
		{"template unfilled", []string{"contract", "propose", template, "--id", "CTR-1"}, cli.ErrUsage, "is a template: give --task and --record-key"},
		{"no id", []string{"contract", "propose", template, "--task", "t"}, cli.ErrUsage, "--id ID"},
		{"no file", []string{"contract", "propose", "--id", "CTR-1"}, cli.ErrUsage, "contract propose FILE"},
		{"bad scope", []string{"contract", "propose", template, "--id", "CTR-1", "--task", "t", "--record-key", "k", "--scope", "SCOPE_GALAXY"}, cli.ErrUsage, "not a scope"},
		{"no such file", []string{"contract", "propose", "no-such.yaml", "--id", "CTR-1"}, nil, "no-such.yaml"},
		{"promote unknown", []string{"contract", "promote", "CTR-none", "--as", "policy-owner"}, nil, "promote CTR-none"},
		{"bind without agent", []string{"contract", "bind", "CTR-1", "--task", "t"}, cli.ErrUsage, "--agent A"},
		{"bind unknown", []string{"contract", "bind", "CTR-none", "--task", "t", "--agent", "agent"}, nil, "bind t to CTR-none"},
		{"tasks limit", []string{"tasks", "--limit", "5000"}, cli.ErrUsage, "--limit must be 1 to 1000"},
		{"commitments limit", []string{"commitments", "--limit", "0"}, cli.ErrUsage, "--limit must be 1 to 1000"},
		{"receipts limit", []string{"receipts", "--limit", "0"}, cli.ErrUsage, "--limit must be at least 1"},
		{"approvals limit", []string{"approvals", "--limit", "1001"}, cli.ErrUsage, "--limit must be 1 to 1000"},
		{"approvals state", []string{"approvals", "--state", "lost"}, cli.ErrUsage, "--state must be one of pending, approved, rejected, consumed, cancelled"},
		{"approvals arguments", []string{"approvals", "apr-1"}, cli.ErrUsage, "takes no arguments"},
		{"ledger at past its deadline", []string{"ledger", "at", "2026-01-01T00:00:00Z", "--timeout", "1ns"}, nil, "the kernel goes on replaying its journal to 2026-01-01T00:00:00Z: run the command again in a while, or give a longer --timeout"},
		{"unknown context", []string{"tasks", "--context", "nowhere"}, cli.ErrUsage, `no context "nowhere"`},
		{"context set without kernel", []string{"context", "set", "x", "--pki", root, "--as", "governance"}, cli.ErrUsage, "needs --kernel, --pki and --as"},
		{"context name", []string{"context", "set", "a/b", "--kernel", gov, "--pki", root, "--as", "governance"}, cli.ErrUsage, "a context name"},
		{"use unknown context", []string{"context", "use", "nowhere"}, cli.ErrUsage, `no context "nowhere"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.HasPrefix(tt.args[0], "context") {
				args = append(append([]string(nil), tt.args...), flags...)
			}
			_, err := run(t, args...)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
	// None of it changed the ledger or stored a context.
	out, err := run(t, append([]string{"ledger", "at"}, flags...)...)
	if err != nil || strings.Contains(out, "CTR-") {
		t.Errorf("ledger after refusals: %v\n%s", err, out)
	}
	if out, err := run(t, "context", "list"); err != nil || !strings.HasPrefix(out, "no contexts") {
		t.Errorf("contexts after refusals: %v\n%s", err, out)
	}
}

// TestContexts: the file is private and under XDG_CONFIG_HOME when set;
// flags override the context in use; a broken file is an error, not
// ignored.
func TestContexts(t *testing.T) {
	dir := home(t)
	if _, err := run(t, "context", "set", "a", "--kernel", "127.0.0.1:1", "--pki", "keys", "--as", "governance"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".config", "ambit", "contexts.yaml")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("context file %s: %v, mode %v", path, err, info)
	}
	data, _ := os.ReadFile(path)
	wd, _ := os.Getwd()
	if !strings.Contains(string(data), "pki: "+filepath.Join(wd, "keys")) || !strings.Contains(string(data), "current: a") {
		t.Errorf("context file:\n%s", data)
	}
	// A second context is stored, not used, until ambitctl context use.
	if _, err := run(t, "context", "set", "b", "--kernel", "127.0.0.1:2", "--pki", "/keys", "--as", "policy-owner", "--kernel-name", "kernel.example"); err != nil {
		t.Fatal(err)
	}
	out, _ := run(t, "context", "list")
	if !strings.Contains(out, "* a ") || !strings.Contains(out, "  b ") {
		t.Errorf("list:\n%s", out)
	}
	if out, err := run(t, "context", "use", "b"); err != nil || !strings.Contains(out, "using context b") {
		t.Fatalf("use: %v %s", err, out)
	}
	// Changing one key of b keeps the others.
	if _, err := run(t, "context", "set", "b", "--as", "governance"); err != nil {
		t.Fatal(err)
	}
	out, _ = run(t, "context", "list")
	if !strings.Contains(out, "* b                kernel 127.0.0.1:2 (certificate for kernel.example) as governance, keys in /keys") {
		t.Errorf("list after changing b:\n%s", out)
	}
	// XDG_CONFIG_HOME wins over HOME.
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	if out, _ := run(t, "context", "list"); !strings.HasPrefix(out, "no contexts in "+filepath.Join(xdg, "ambit", "contexts.yaml")) {
		t.Errorf("list under XDG_CONFIG_HOME:\n%s", out)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	// Flags override the context: the kernel named on the command line is
	// the one dialled (nothing listens there).
	dead := servicetest.DeadAddr(t)
	if _, err := run(t, "tasks", "--kernel", dead, "--timeout", "2s"); err == nil || !strings.Contains(err.Error(), "list tasks") {
		t.Errorf("tasks against a dead kernel: %v", err)
	}
	// A broken file is reported.
	if err := os.WriteFile(path, []byte("current: a\ncontexts: {a: {kernel: x, pki: /k, as: g, colour: blue}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "tasks"); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("tasks with a broken context file: %v", err)
	}
}
