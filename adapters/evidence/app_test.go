package evidence_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ambitkernel/ambit/adapters/evidence"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

// appConfig writes the adapter's configuration: its own key folder in
// pkiDir, the kernel at kernelAddr, a SQL source over dbPath and an MCP
// source at ticketsURL.
func appConfig(t *testing.T, pkiDir, kernelAddr, dbPath, ticketsURL string) string {
	t.Helper()
	return servicetest.WriteFile(t, "evidence.yaml", fmt.Sprintf(`
pki_dir: %s
kernel: %s
kernel_timeout: 1s
log_level: error
watch_interval: 20ms
health_interval: 20ms
sources:
  cases_db:
    provenance: PROVENANCE_TRUSTED
    sql:
      database: %s
      table: cases
      key: case_id
      subject: owner_id
      state_version: '"cases-v" + string(record.revision)'
      columns: [case_id, owner_id, total, revision]
  tickets:
    provenance: PROVENANCE_UNTRUSTED
    mcp:
      server: {url: %q}
      tool: get_ticket
      key_argument: ticket_id
      subject: customer_id
      state_version: '"ticket-v" + string(record.version)'
      columns: [ticket_id, customer_id, status, version]
`, pki.IdentityDir(pkiDir, "evidence"), kernelAddr, dbPath, ticketsURL))
}

// healthOf asks the adapter at addr, as the agent, for the
// EvidenceService's health.
func healthOf(t *testing.T, pkiDir, addr string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	var st healthpb.HealthCheckResponse_ServingStatus
	err := servicetest.Call(t, pkiDir, "agent", pki.RoleEvidence, addr, func(ctx context.Context, conn *grpc.ClientConn) error {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: evidencev1.EvidenceService_ServiceDesc.ServiceName})
		st = resp.GetStatus()
		return err
	})
	if err != nil {
		t.Fatalf("health check: %v", err)
	}
	return st
}

// kernelHealth serves, with the kernel's certificate, only the gRPC health
// service, reporting the adapter service SERVING: the kernel as a
// sidecar's health probe sees it.
func kernelHealth(t *testing.T, pkiDir string) string {
	t.Helper()
	tlsCfg, err := pki.ServerTLS(pki.IdentityDir(pkiDir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.NewServer(zap.NewNop(), tlsCfg, serve.Policy{})
	srv.Health.SetServingStatus(kernelv1.AdapterService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.GRPC.Serve(lis) }()
	t.Cleanup(func() { srv.GRPC.Stop(); <-done })
	return lis.Addr().String()
}

// TestRunServesAndFailsClosedWithoutKernel starts the real server (mutual
// TLS, role policy, declared SQL and MCP sources) with a kernel address
// nothing listens on: an agent's read is refused as Unavailable, a peer of
// another role is refused outright, and the adapter is NOT_SERVING.
func TestRunServesAndFailsClosedWithoutKernel(t *testing.T) {
	// Registered first, so it runs last: after the test's servers, whose
	// idle connections end with them, are closed.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	pkiDir := servicetest.PKI(t)
	dbPath, _ := database(t)
	ts := ticketServer(t)
	s := servicetest.Start(t, evidence.Run, "--config", appConfig(t, pkiDir, servicetest.DeadAddr(t), dbPath, ts.URL), "--listen", "127.0.0.1:0")

	servicetest.CallAll(t, pkiDir, pki.RoleEvidence, s.Addr, []servicetest.Answer{
		{Identity: "agent", Code: codes.Unavailable, Message: "kernel unreachable: nothing was read"},
		{Identity: "governance", Code: codes.Unavailable, Message: "kernel unreachable: nothing was read"},
		{Identity: "verifier", Code: codes.PermissionDenied, Message: "method requires role agent or governance"},
		{Identity: "action", Code: codes.PermissionDenied, Message: "method requires role agent or governance"},
	}, func(ctx context.Context, conn *grpc.ClientConn, identity string) error {
		resp, err := evidencev1.NewEvidenceServiceClient(conn).Read(ctx, &evidencev1.ReadRequest{
			TaskId: "task-1", Source: "cases_db", RecordKey: "K-1", Purpose: "review", Fields: []string{"total"},
		})
		if resp != nil {
			t.Errorf("%s: Read returned %v without a kernel", identity, resp)
		}
		return err
	})
	if st := healthOf(t, pkiDir, s.Addr); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health without a kernel = %v, want NOT_SERVING", st)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancellation", err)
	}
}

// TestRunHealthFollowsSources: with the kernel serving, the adapter is
// SERVING only while every source can be read.
func TestRunHealthFollowsSources(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	pkiDir := servicetest.PKI(t)
	dbPath, db := database(t)
	ts := ticketServer(t)
	s := servicetest.Start(t, evidence.Run, "--config", appConfig(t, pkiDir, kernelHealth(t, pkiDir), dbPath, ts.URL))

	health := func() healthpb.HealthCheckResponse_ServingStatus { return healthOf(t, pkiDir, s.Addr) }
	eventually(t, "SERVING with the kernel and every source up", func() bool { return health() == healthpb.HealthCheckResponse_SERVING })
	exec(t, db, `ALTER TABLE cases RENAME TO cases_old`)
	eventually(t, "NOT_SERVING while a source is unreadable", func() bool { return health() == healthpb.HealthCheckResponse_NOT_SERVING })
	exec(t, db, `ALTER TABLE cases_old RENAME TO cases`)
	eventually(t, "SERVING once it is readable again", func() bool { return health() == healthpb.HealthCheckResponse_SERVING })

	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancellation", err)
	}
}

func TestRunFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no config", nil, "--config is required"},
		{"stray argument", []string{"--config", "x.yaml", "extra"}, "unexpected arguments"},
		{"missing file", []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, "read config"},
		{"unknown flag", []string{"--verbose"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := evidence.Run(context.Background(), tt.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	var out bytes.Buffer
	if err := evidence.Run(context.Background(), []string{"--help"}, &out); err != nil {
		t.Errorf("Run --help = %v, want nil", err)
	}
	if !strings.Contains(out.String(), "-config") {
		t.Errorf("--help printed %q", out.String())
	}
}

func TestRunRefusesAnUnreadableSource(t *testing.T) {
	pkiDir := servicetest.PKI(t)
	dbPath, db := database(t)
	ts := ticketServer(t)
	exec(t, db, `ALTER TABLE cases DROP COLUMN total`)
	err := evidence.Run(context.Background(), []string{"--config", appConfig(t, pkiDir, "127.0.0.1:1", dbPath, ts.URL)}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `sources.cases_db.sql.columns[2]: table "cases" has no column "total"`) {
		t.Errorf("Run with an undeclared column = %v, want an error naming its key path", err)
	}
}

// TestRunRefusesImpostorKernel pins the review finding: an evidence
// adapter pointed at a process holding the agent's certificate trusted it
// as its kernel. The handshake fails on the server's role: no call
// reaches the impostor, the read is refused as Unavailable and the
// adapter reports NOT_SERVING.
func TestRunRefusesImpostorKernel(t *testing.T) {
	pkiDir := servicetest.PKI(t)
	impostorTLS, err := pki.ServerTLS(pki.IdentityDir(pkiDir, "agent"), "agent")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	impostor := grpc.NewServer(grpc.Creds(credentials.NewTLS(impostorTLS)),
		grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error { calls.Add(1); return nil }))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = impostor.Serve(lis) }()
	defer impostor.Stop()

	dbPath, _ := database(t)
	ts := ticketServer(t)
	s := servicetest.Start(t, evidence.Run, "--config", appConfig(t, pkiDir, lis.Addr().String(), dbPath, ts.URL))
	servicetest.CallAll(t, pkiDir, pki.RoleEvidence, s.Addr, []servicetest.Answer{
		{Identity: "agent", Code: codes.Unavailable, Message: "kernel unreachable: nothing was read"},
	}, func(ctx context.Context, conn *grpc.ClientConn, _ string) error {
		_, err := evidencev1.NewEvidenceServiceClient(conn).Read(ctx, &evidencev1.ReadRequest{
			TaskId: "t", Source: "cases_db", RecordKey: "K-1", Purpose: "review", Fields: []string{"total"},
		})
		return err
	})
	if st := healthOf(t, pkiDir, s.Addr); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health with an impostor kernel = %v, want NOT_SERVING", st)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls reached the impostor", n)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}
