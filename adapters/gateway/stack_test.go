package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/gateway"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/document"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// The live tests start the stack with `ambitctl dev up` (or use the one
// whose stack.json AMBIT_STACK names), bind tasks to the expense-refund
// example's contract through the governance API and drive ambit-mcp with
// the Go SDK's MCP client, over stdio and over streamable HTTP.

const (
	// Governance identities: the policy owner binds tasks, another
	// governance identity approves.
	policyOwner = "policy-owner"
	approver    = "governance"
	agentName   = "agent"
	purpose     = "expense-refund"

	startTimeout = 2 * time.Minute
	stopTimeout  = 30 * time.Second
	callTimeout  = 30 * time.Second
)

// repo is the repository's root, two levels up from this package.
var repo = func() string {
	d, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return d
}()

// stack is stack.json as `ambitctl dev up` writes it.
type stack struct {
	PKI    string `json:"pki"`
	Kernel struct {
		Agent, Adapter, Governance string
	} `json:"kernel"`
	Evidence string   `json:"evidence"`
	Action   string   `json:"action"`
	Verifier string   `json:"verifier"`
	Agents   []string `json:"agents"`
	// Examples holds each example's placeholder values (DATA: its data
	// folder).
	Examples map[string]map[string]string `json:"examples"`
}

// payments runs a statement on the expense-refund example's payments
// table, the refund's system of record.
func payments(t *testing.T, s stack, stmt string) {
	t.Helper()
	db, err := sqldb.Open(filepath.Join(s.Examples["expense-refund"]["DATA"], "payments.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// binDir receives the binaries the live tests run, built from this
// checkout; TestMain removes it.
var binDir string

// build builds the packages into binDir.
func build(t *testing.T, pkgs ...string) string {
	t.Helper()
	if binDir == "" {
		dir, err := os.MkdirTemp("", "ambit-mcp-bin-")
		if err != nil {
			t.Fatal(err)
		}
		binDir = dir
	}
	cmd := exec.Command("go", append([]string{"build", "-o", binDir + "/"}, pkgs...)...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return binDir
}

// liveStack returns the running stack, starting one with `ambitctl dev
// up` unless AMBIT_STACK names one.
func liveStack(t *testing.T) (stack, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the live tests start real processes")
	}
	bin := build(t, "./adapters/cmd/ambit-mcp", "./kernel/cmd/ambitctl")
	if f := os.Getenv("AMBIT_STACK"); f != "" {
		return readStack(t, f), bin
	}
	build(t, "./kernel/cmd/ambit-kernel", "./adapters/cmd/ambit-evidence", "./adapters/cmd/ambit-action",
		"./verifier/cmd/ambit-verifier", "./examples/supportdesk/cmd/supportdesk-mcp",
		"./examples/expense-refund/cmd/refund-data")
	dir := t.TempDir()
	logFile := filepath.Join(dir, "dev-up.log")
	logf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "ambitctl"), "dev", "up", filepath.Join(dir, "dev"), "--example", "examples/expense-refund")
	cmd.Dir, cmd.Stdout, cmd.Stderr = repo, logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() { stopProcess(t, cmd, done, logFile) })
	file := filepath.Join(dir, "dev", "stack.json")
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("ambitctl dev up exited (%v) before writing %s:\n%s", err, file, readFile(logFile))
		case <-time.After(100 * time.Millisecond):
		}
		if data, err := os.ReadFile(file); err == nil && json.Valid(data) {
			return readStack(t, file), bin
		}
	}
	t.Fatalf("ambitctl dev up wrote no %s within %s:\n%s", file, startTimeout, readFile(logFile))
	return stack{}, ""
}

func readStack(t *testing.T, file string) stack {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s stack
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return s
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// stopProcess sends SIGTERM and waits; a process that does not stop is
// killed and fails the test.
func stopProcess(t *testing.T, cmd *exec.Cmd, done chan error, logFile string) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("%s did not stop within %s of SIGTERM:\n%s", cmd.Path, stopTimeout, readFile(logFile))
	}
}

// bindTask proposes, promotes and binds a fresh task on claim for the
// agent under the example's contract, valid four hours.
func bindTask(t *testing.T, s stack, claim string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	data, err := os.ReadFile(filepath.Join(repo, "examples", "expense-refund", "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c contractv1.Contract
	if err := document.DecodeProto(data, &c); err != nil {
		t.Fatal(err)
	}
	task := fmt.Sprintf("mcp-%s-%d", strings.ToLower(claim), time.Now().UnixNano())
	c.Binding.TaskId, c.Binding.Record.Key = task, claim
	c.Binding.ValidUntil = timestamppb.New(time.Now().Add(4 * time.Hour))
	tlsCfg, err := pki.ClientTLS(pki.IdentityDir(s.PKI, policyOwner), policyOwner, pki.Expect{Role: pki.RoleKernel})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := serve.Dial(ctx, s.Kernel.Governance, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gov := kernelv1.NewGovernanceServiceClient(conn)
	id := "ctr-" + task
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: &ledgerv1.CanonItem{
		CanonItemId:    id,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef:  "policy-repo:examples/expense-refund/contract.yaml",
		Scope:          ledgerv1.Scope_SCOPE_TASK,
		Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
		PromotionState: ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED,
		ConflictState:  ledgerv1.ConflictState_CONFLICT_STATE_NONE,
		Kind:           ledgerv1.ItemKind_ITEM_KIND_CONTRACT,
		Contract:       &c,
	}}); err != nil {
		t.Fatalf("propose contract: %v", err)
	}
	promoted, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: id})
	if err != nil {
		t.Fatalf("promote contract: %v", err)
	}
	if got := promoted.GetItem().GetClass(); got != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Fatalf("contract %s is %s after promotion: %v", id, got, promoted.GetItem().GetReasons())
	}
	if _, err := gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: task, ContractItemId: id, Agent: agentName}); err != nil {
		t.Fatalf("bind task: %v", err)
	}
	return task
}

// decide approves or rejects an approval ("approve" or "reject") as a
// governance identity with ambitctl.
func decide(t *testing.T, s stack, bin, verb, approvalID string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "ambitctl"), verb, approvalID,
		"--kernel", s.Kernel.Governance, "--pki", s.PKI, "--as", approver).CombinedOutput()
	if err != nil {
		t.Fatalf("ambitctl %s %s: %v\n%s", verb, approvalID, err, out)
	}
}

// Transports the gateway is driven over.
const (
	overStdio = "stdio"
	overHTTP  = "http"
)

// connect starts ambit-mcp for task over transport and returns an MCP
// client session to it; both end with the test.
func connect(t *testing.T, s stack, bin, task, transport string) *mcp.ClientSession {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "ambit-mcp.yaml")
	if err := config.Write(cfgFile, map[string]any{
		"identity": agentName, "pki_dir": pki.IdentityDir(s.PKI, agentName), "log_level": "debug",
		"kernel": s.Kernel.Agent, "evidence": s.Evidence, "action": s.Action, "verifier": s.Verifier,
		"task_id": task, "purpose": purpose, "shutdown_grace": "2s",
	}); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "ambit-mcp.log")
	logf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		logf.Close()
		if t.Failed() {
			t.Logf("ambit-mcp's log:\n%s", readFile(logFile))
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-live-test", Version: "v1"}, nil)
	var tr mcp.Transport
	switch transport {
	case overStdio:
		cmd := exec.Command(filepath.Join(bin, "ambit-mcp"), "--config", cfgFile, "--stdio")
		cmd.Stderr = logf
		tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}
	case overHTTP:
		addrFile := filepath.Join(dir, "addr.json")
		cmd := exec.Command(filepath.Join(bin, "ambit-mcp"), "--config", cfgFile, "--addr-file", addrFile)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { stopProcess(t, cmd, done, logFile) })
		tr = &mcp.StreamableClientTransport{Endpoint: waitURL(t, addrFile, done, logFile)}
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect over %s: %v\n%s", transport, err, readFile(logFile))
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Errorf("close the session: %v", err)
		}
	})
	return cs
}

func waitURL(t *testing.T, addrFile string, done chan error, logFile string) string {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("ambit-mcp exited (%v):\n%s", err, readFile(logFile))
		case <-time.After(20 * time.Millisecond):
		}
		var addrs map[string]string
		if data, err := os.ReadFile(addrFile); err == nil && json.Unmarshal(data, &addrs) == nil && addrs[gateway.MCPListener] != "" {
			return addrs[gateway.MCPListener]
		}
	}
	t.Fatalf("ambit-mcp wrote no address within %s:\n%s", startTimeout, readFile(logFile))
	return ""
}
