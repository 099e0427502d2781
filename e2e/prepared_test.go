package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/server"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A prepared reply measures what the transport alone costs a decision:
// a process on the kernel's own server stack (its certificate, mutual
// TLS, call metrics, tracing, authorisation, request validation) answers
// SubmitProposal with a decision the kernel made earlier, without any
// work. The same client sends it the same request and reads the same
// reply bytes as from the kernel, so what a decision costs beyond the
// prepared reply is the kernel's work, and what the prepared reply costs
// beyond a health check is carrying a decision's messages.

// preparedEnv, set in a process's environment, makes this test binary
// that process instead of running tests: its value is the configuration
// file.
const preparedEnv = "AMBIT_E2E_PREPARED_CONFIG"

// preparedConfig is the prepared-reply process's configuration: the keys
// every process has (its identity is the kernel's, from the kernel's PKI
// folder), its listener, the file holding the reply, and how long each
// reply is held, working, before it is sent.
type preparedConfig struct {
	service.Common `json:",inline"`
	Listen         string          `json:"listen"`
	Reply          string          `json:"reply"`
	Hold           config.Duration `json:"hold"`
}

func (c *preparedConfig) ApplyDefaults() { c.Common.ApplyDefaults("kernel") }

func (c *preparedConfig) Validate() error {
	if c.Listen == "" || c.Reply == "" {
		return fmt.Errorf("listen and reply are required")
	}
	return c.Common.Validate()
}

// preparedAgent answers every proposal with one reply, after hold.
type preparedAgent struct {
	agentv1.UnimplementedAgentServiceServer
	reply *agentv1.SubmitProposalResponse
	hold  time.Duration
}

func (a preparedAgent) SubmitProposal(context.Context, *agentv1.SubmitProposalRequest) (*agentv1.SubmitProposalResponse, error) {
	// The hold keeps the handler's goroutine running, as a decision's
	// work does; a sleep would park it, and Go's timers wake it a
	// millisecond late.
	for start := time.Now(); time.Since(start) < a.hold; {
	}
	return a.reply, nil
}

// preparedMain runs the prepared-reply process until SIGTERM or SIGINT.
func preparedMain(configPath string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := &preparedConfig{}
	err := service.Main(ctx, service.Program{Name: "ambit-prepared", Role: pki.RoleKernel, Config: cfg,
		Run: func(ctx context.Context, p *service.Process) error {
			data, err := os.ReadFile(cfg.Reply)
			if err != nil {
				return err
			}
			reply := &agentv1.SubmitProposalResponse{}
			if err := proto.Unmarshal(data, reply); err != nil {
				return fmt.Errorf("reply %s: %w", cfg.Reply, err)
			}
			srv := p.NewServer("agent", server.AgentPolicy())
			agentv1.RegisterAgentServiceServer(srv, preparedAgent{reply: reply, hold: time.Duration(cfg.Hold)})
			return p.Serve(ctx, []serve.Listener{{Name: "agent", Addr: cfg.Listen, Server: srv}})
		}}, []string{"--config", configPath}, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ambit-prepared:", err)
		return 1
	}
	return 0
}

// preparedProcess is a started prepared-reply process.
type preparedProcess struct {
	// agent's proposals go to the process; its other calls go to the
	// stack's sidecars.
	agent *client.Agent
	// metrics is the process's metrics listener.
	metrics string
	// stop stops the process and closes agent.
	stop func()
}

// startPrepared starts a prepared-reply process answering reply after
// hold, with the kernel's identity from st's PKI. It is stopped when tb
// ends if not before.
func startPrepared(tb testing.TB, st *stack, reply *agentv1.SubmitProposalResponse, hold time.Duration) preparedProcess {
	tb.Helper()
	dir := tb.TempDir()
	data, err := proto.Marshal(reply)
	if err != nil {
		tb.Fatal(err)
	}
	replyPath, addrPath := filepath.Join(dir, "reply.pb"), filepath.Join(dir, "addrs.json")
	if err := os.WriteFile(replyPath, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	// The keys the stack gives its kernel, less its database and store.
	cfg, err := json.Marshal(map[string]any{"identity": "kernel", "pki_dir": pki.IdentityDir(st.PKI, "kernel"),
		"addr_file": addrPath, "listen": "127.0.0.1:0", "reply": replyPath, "hold": hold.String(),
		"reflection": true, "shutdown_grace": "5s", "metrics": "127.0.0.1:0"})
	if err != nil {
		tb.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prepared.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		tb.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "prepared.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), preparedEnv+"="+cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	var exit error
	go func() { exit = cmd.Wait(); _ = logf.Close(); close(done) }()
	var agent *client.Agent
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if agent != nil {
				_ = agent.Close()
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				tb.Errorf("the prepared-reply process did not stop on SIGTERM within 10s")
			}
		})
	}
	tb.Cleanup(stop)
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	addrs, err := serve.WaitAddrFile(wctx, addrPath, done, 20*time.Millisecond)
	if errors.Is(err, serve.ErrExited) {
		err = fmt.Errorf("%w: %v", err, exit)
	}
	if err == nil && (addrs["agent"] == "" || addrs["metrics"] == "") {
		err = fmt.Errorf("want the agent and metrics listeners, have %v", addrs)
	}
	if err != nil {
		log, _ := os.ReadFile(logf.Name())
		tb.Fatalf("prepared-reply process: %v\n%s", err, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	agent, err = client.Dial(ctx, pki.IdentityDir(st.PKI, st.Agents[0]), st.Agents[0],
		client.Addresses{Kernel: addrs["agent"], Evidence: st.Info.Evidence, Action: st.Info.Action, Verifier: st.Info.Verifier})
	if err != nil {
		tb.Fatal(err)
	}
	return preparedProcess{agent: agent, metrics: addrs["metrics"], stop: stop}
}

// TestPreparedReply checks that the prepared-reply process is the
// kernel's stack without the kernel's work: it answers a proposal with
// the decision the kernel made, byte for byte, and refuses what the
// kernel's listener refuses before any work (a request that fails
// validation).
func TestPreparedReply(t *testing.T) {
	ctx := testCtx(t)
	st := startStack(t, devstack.Options{})
	if err := bindBenchTask(ctx, st, "bench"); err != nil {
		t.Fatal(err)
	}
	p := benchProposal(ctx, t, st)
	d, err := st.Agent.Propose(ctx, p)
	if err != nil || !d.Allowed() {
		t.Fatalf("the kernel's decision: %v %v", d, err)
	}
	const hold = 50 * time.Millisecond
	prepared := startPrepared(t, st, d.SubmitProposalResponse, hold).agent
	start := time.Now()
	got, err := prepared.Propose(ctx, p)
	if took := time.Since(start); took < hold {
		t.Errorf("the prepared reply came after %s, before its hold of %s", took, hold)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got.SubmitProposalResponse, d.SubmitProposalResponse) {
		t.Errorf("prepared reply %v, want the kernel's %v", got.SubmitProposalResponse, d.SubmitProposalResponse)
	}
	bad := p
	bad.Task = ""
	_, kernelErr := st.Agent.Propose(ctx, bad)
	_, preparedErr := prepared.Propose(ctx, bad)
	if status.Code(kernelErr) != codes.InvalidArgument || status.Code(preparedErr) != codes.InvalidArgument {
		t.Errorf("a proposal without a task: the kernel answers %v, the prepared reply %v; want InvalidArgument from both", kernelErr, preparedErr)
	}
}
