package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDevUp runs `ambitctl dev up` as the clients' tests do: it writes
// stack.json once every process serves, keeps them running, and on SIGTERM
// stops every one of them and removes stack.json.
func TestDevUp(t *testing.T) {
	d := devUp(t, "--agents", "2", "--sidecars", "shared",
		"--example", filepath.Join(examplesDir, demo.ExpenseRefund), "--example", filepath.Join(examplesDir, demo.Supportdesk))
	info := d.info
	if !slices.Equal(info.Agents, []string{"agent", "agent-2"}) || info.PKI != filepath.Join(d.dir, "pki") ||
		info.Examples[demo.ExpenseRefund][devstack.VarData] != filepath.Join(d.dir, "data") ||
		!strings.HasPrefix(info.Examples[demo.Supportdesk][demo.DeskURL], "http://127.0.0.1:") || info.Sidecars != nil {
		t.Errorf("stack.json: %+v", info)
	}

	// Every listener serves, and checks the role of whoever answers.
	d.serving(t, "agent-2", []listener{
		{info.Kernel.Agent, pki.RoleKernel}, {info.Kernel.Adapter, pki.RoleKernel}, {info.Kernel.Governance, pki.RoleKernel},
		{info.Evidence, pki.RoleEvidence}, {info.Action, pki.RoleAction}, {info.Verifier, pki.RoleVerifier},
	})
	d.stop(t, []string{devstack.Kernel, devstack.Evidence, devstack.Action, devstack.Verifier, "supportdesk-mcp"})
}

// TestDevUpPerAgent runs `ambitctl dev up --agents 3` (per-agent sidecars,
// the default with several agents):
// one kernel and, per agent, its own evidence adapter, action adapter,
// verifier and ambit-mcp, each started from a configuration file in the
// folder, each with its own identity, all stopped on SIGTERM.
//
// Beside a PostgreSQL server (make test), the kernel tier is two replicas
// sharing it: the topology of a deployment beyond one machine.
func TestDevUpPerAgent(t *testing.T) {
	// Per-agent is the default with several agents.
	args := []string{"--agents", "3", "--example", filepath.Join(examplesDir, demo.ExpenseRefund)}
	replicas := os.Getenv(pgtest.Env) != ""
	if replicas {
		args = append(args, "--database", pgtest.Database(t), "--kernel-replicas", "2")
	}
	d := devUp(t, args...)
	info := d.info
	if !slices.Equal(info.Agents, []string{"agent", "agent-2", "agent-3"}) || len(info.Sidecars) != 3 {
		t.Fatalf("stack.json: %+v", info)
	}
	names := []string{devstack.Kernel}
	listeners := []listener{{info.Kernel.Agent, pki.RoleKernel}, {info.Kernel.Adapter, pki.RoleKernel}}
	if replicas {
		if len(info.KernelReplicas) != 2 || info.KernelReplicas[0] != info.Kernel {
			t.Fatalf("stack.json's kernel replicas: %+v", info.KernelReplicas)
		}
		names = append(names, devstack.KernelReplica(2))
		listeners = append(listeners, listener{info.KernelReplicas[1].Agent, pki.RoleKernel}, listener{info.KernelReplicas[1].Adapter, pki.RoleKernel})
	}
	for _, a := range info.Agents {
		own := info.Sidecars[a]
		if own.Task != devstack.TaskName(a) || !strings.HasPrefix(own.MCP, "http://127.0.0.1:") {
			t.Errorf("stack.json's sidecars of %s: %+v", a, own)
		}
		listeners = append(listeners, listener{own.Evidence, pki.RoleEvidence}, listener{own.Action, pki.RoleAction}, listener{own.Verifier, pki.RoleVerifier})
		for _, kind := range []string{devstack.Evidence, devstack.Action, devstack.Verifier, devstack.MCP} {
			name := devstack.SidecarName(kind, a)
			names = append(names, name)
			if p := info.Processes[name]; p.Config != filepath.Join(d.dir, name+".yaml") {
				t.Errorf("process %s: configuration %q", name, p.Config)
			}
			if kind != devstack.MCP && own.Identities[kind] != name {
				t.Errorf("%s's %s sidecar is %q, want %q", a, kind, own.Identities[kind], name)
			}
		}
		if own.Identities[devstack.MCP] != a {
			t.Errorf("%s's gateway acts as %q", a, own.Identities[devstack.MCP])
		}
	}
	// The shared addresses are the first agent's sidecars.
	if info.Evidence != info.Sidecars["agent"].Evidence || info.Action != info.Sidecars["agent"].Action {
		t.Errorf("top-level sidecars %s %s are not the first agent's %+v", info.Evidence, info.Action, info.Sidecars["agent"])
	}
	d.serving(t, "agent-3", listeners)
	d.stop(t, names)
}

// listener is a TLS listener and the role its certificate must carry.
type listener struct {
	addr string
	role pki.Role
}

// devRun is a running `ambitctl dev up`.
type devRun struct {
	dir    string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
	info   devstack.Info
	infoAt string
}

// devUp starts `ambitctl dev up DIR --bin BIN args...`, waits for its
// stack.json and stops it when the test ends.
func devUp(t *testing.T, args ...string) *devRun {
	t.Helper()
	d := &devRun{dir: filepath.Join(t.TempDir(), "dev"), out: &syncBuffer{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(filepath.Join(binDir, "ambitctl"), append([]string{"dev", "up", d.dir, "--bin", binDir}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		// A failed test must not leave the stack behind.
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
		}
	})
	d.infoAt = filepath.Join(d.dir, devstack.InfoFile)
	for deadline := time.Now().Add(90 * time.Second); ; {
		var err error
		if d.info, err = devstack.ReadInfo(d.infoAt); err == nil {
			break
		}
		select {
		case err := <-d.exited:
			t.Fatalf("dev up exited (%v) before writing %s:\n%s", err, d.infoAt, d.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 90s:\n%s", d.infoAt, d.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The file is written before the line that names it is printed, and
	// the line reaches the buffer through a pipe: give it time.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.out.String(), d.infoAt); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("dev up does not print where stack.json is:\n%s", d.out.String())
			break
		}
	}
	return d
}

// serving checks that each listener answers SERVING as identity and
// presents its role.
func (d *devRun) serving(t *testing.T, identity string, ls []listener) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, l := range ls {
		tlsCfg, err := pki.ClientTLS(filepath.Join(d.info.PKI, identity), identity, pki.Expect{Role: l.role})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := serve.Dial(ctx, l.addr, tlsCfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		_ = conn.Close()
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("%s (%s): %v %v", l.addr, l.role, resp.GetStatus(), err)
		}
	}
}

// stop checks that the named processes run, sends SIGTERM to dev up and
// checks that every one of them stopped, cleanly, and stack.json is gone.
func (d *devRun) stop(t *testing.T, names []string) {
	t.Helper()
	for _, name := range names {
		if p, ok := d.info.Processes[name]; !ok || p.PID <= 0 || !alive(p.PID) {
			t.Errorf("process %s: %+v is not running", name, p)
		}
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("dev up exited with %v after SIGTERM:\n%s", err, d.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("dev up did not exit within 60s of SIGTERM:\n%s", d.out.String())
	}
	for _, name := range names {
		if pid := d.info.Processes[name].PID; alive(pid) {
			t.Errorf("process %s (pid %d) outlived dev up", name, pid)
		}
	}
	if _, err := devstack.ReadInfo(d.infoAt); err == nil {
		t.Error("stack.json outlived the stack")
	}
	if !strings.Contains(d.out.String(), "every process stopped cleanly") {
		t.Errorf("dev up's output:\n%s", d.out.String())
	}
}

// alive reports whether a process with the pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
