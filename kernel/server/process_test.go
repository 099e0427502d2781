package server_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ambitkernel/ambit/kernel/server"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

func kernelConfig(t *testing.T, root, identity string) string {
	t.Helper()
	return servicetest.WriteFile(t, "kernel.yaml", fmt.Sprintf(`
identity: %s
pki_dir: %s
database: %s
log_level: error
health_interval: 50ms
listen: {agent: "127.0.0.1:0", adapter: "127.0.0.1:0", governance: "127.0.0.1:0"}
peers: {evidence: [evidence], action: [action], verifier: [verifier]}
promotion_authorities: {SCOPE_TASK: [policy-owner]}
`, identity, pki.IdentityDir(root, identity), filepath.Join(t.TempDir(), "kernel.db")))
}

// TestKernelStartsThroughTheFrame: the kernel serves its three listeners,
// each reporting its own service's health.
func TestKernelStartsThroughTheFrame(t *testing.T) {
	root := servicetest.PKI(t)
	s := servicetest.Start(t, server.Run, "--config", kernelConfig(t, root, "kernel"))
	for listener, svc := range map[string]string{
		"agent":      "ambit.agent.v1.AgentService",
		"adapter":    "ambit.kernel.v1.AdapterService",
		"governance": "ambit.kernel.v1.GovernanceService",
	} {
		err := servicetest.Call(t, root, "agent", pki.RoleKernel, s.Addrs[listener], func(ctx context.Context, conn *grpc.ClientConn) error {
			for _, name := range []string{"", svc} {
				resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: name})
				if err != nil {
					return err
				}
				if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("%s listener: health of %q = %v", listener, name, resp.GetStatus())
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s listener: %v", listener, err)
		}
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestKernelRefusesAnotherRole: the kernel refuses to start with a
// certificate whose role is not the kernel's.
func TestKernelRefusesAnotherRole(t *testing.T) {
	root := servicetest.PKI(t)
	err := server.Run(context.Background(), []string{"--config", kernelConfig(t, root, "agent")}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "has role agent, want kernel") {
		t.Errorf("Run as the agent = %v, want a refusal naming the role", err)
	}
	var out bytes.Buffer
	if err := server.Run(context.Background(), []string{"--version"}, &out); err != nil || !strings.HasPrefix(out.String(), server.Name+" ") {
		t.Errorf("--version: %q, %v", out.String(), err)
	}
}
