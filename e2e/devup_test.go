package e2e_test

import (
	"bytes"
	"context"
	"errors"
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
	dir := filepath.Join(t.TempDir(), "dev")
	var out syncBuffer
	cmd := exec.Command(filepath.Join(binDir, "ambitctl"), "dev", "up", dir, "--bin", binDir, "--agents", "2",
		"--example", filepath.Join(examplesDir, demo.ExpenseRefund), "--example", filepath.Join(examplesDir, demo.Supportdesk))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// A failed test must not leave the stack behind.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})

	path := filepath.Join(dir, devstack.InfoFile)
	var info devstack.Info
	for deadline := time.Now().Add(90 * time.Second); ; {
		var err error
		if info, err = devstack.ReadInfo(path); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("dev up exited (%v) before writing %s:\n%s", err, path, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 90s:\n%s", path, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out.String(), path) {
		t.Errorf("dev up does not print where stack.json is:\n%s", out.String())
	}
	if !slices.Equal(info.Agents, []string{"agent", "agent-2"}) || info.PKI != filepath.Join(dir, "pki") ||
		info.Examples[demo.ExpenseRefund][devstack.VarData] != filepath.Join(dir, "data") ||
		!strings.HasPrefix(info.Examples[demo.Supportdesk][demo.DeskURL], "http://127.0.0.1:") {
		t.Errorf("stack.json: %+v", info)
	}

	// Every listener serves, and checks the role of whoever answers.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, l := range []struct {
		addr string
		role pki.Role
	}{
		{info.Kernel.Agent, pki.RoleKernel}, {info.Kernel.Adapter, pki.RoleKernel}, {info.Kernel.Governance, pki.RoleKernel},
		{info.Evidence, pki.RoleEvidence}, {info.Action, pki.RoleAction}, {info.Verifier, pki.RoleVerifier},
	} {
		tlsCfg, err := pki.ClientTLS(filepath.Join(info.PKI, "agent-2"), "agent-2", pki.Expect{Role: l.role})
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
	names := []string{devstack.Kernel, devstack.Evidence, devstack.Action, devstack.Verifier, "supportdesk-mcp"}
	for _, name := range names {
		if p, ok := info.Processes[name]; !ok || p.PID <= 0 || !alive(p.PID) {
			t.Errorf("process %s: %+v is not running", name, p)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("dev up exited with %v after SIGTERM:\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("dev up did not exit within 60s of SIGTERM:\n%s", out.String())
	}
	for _, name := range names {
		if pid := info.Processes[name].PID; alive(pid) {
			t.Errorf("process %s (pid %d) outlived dev up", name, pid)
		}
	}
	if _, err := devstack.ReadInfo(path); err == nil {
		t.Error("stack.json outlived the stack")
	}
	if !strings.Contains(out.String(), "every process stopped cleanly") {
		t.Errorf("dev up's output:\n%s", out.String())
	}
}

// alive reports whether a process with the pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
