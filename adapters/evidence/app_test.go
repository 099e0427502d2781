package evidence_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/adapters/evidence"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

// TestRunFailsClosedWithoutKernel starts the real server (mutual TLS, role
// policy) with a kernel address nothing listens on: an agent's read is
// refused as Unavailable and a peer of another role is refused outright.
func TestRunFailsClosedWithoutKernel(t *testing.T) {
	defer goleak.VerifyNone(t)
	pkiDir := servicetest.PKI(t)
	dbPath := filepath.Join(t.TempDir(), "claims.db")
	db, err := claims.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := claims.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := claims.Seed(ctx, db, claims.DemoData()); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	cfgPath := servicetest.WriteFile(t, "evidence.yaml", fmt.Sprintf(`
pki_dir: %s
kernel: %s
kernel_timeout: 1s
log_level: error
reflection: true
sources:
  claims_db: {kind: claims, database: %s, provenance: PROVENANCE_TRUSTED}
`, pki.IdentityDir(pkiDir, "evidence"), servicetest.DeadAddr(t), dbPath))
	s := servicetest.Start(t, evidence.Run, "--config", cfgPath, "--listen", "127.0.0.1:0")

	servicetest.CallAll(t, pkiDir, pki.RoleEvidence, s.Addr, []servicetest.Answer{
		{Identity: "agent", Code: codes.Unavailable, Message: "kernel unreachable: nothing was read"},
		{Identity: "governance", Code: codes.Unavailable, Message: "kernel unreachable: nothing was read"},
		{Identity: "verifier", Code: codes.PermissionDenied, Message: "method requires role agent or governance"},
		{Identity: "action", Code: codes.PermissionDenied, Message: "method requires role agent or governance"},
	}, func(ctx context.Context, conn *grpc.ClientConn, identity string) error {
		resp, err := evidencev1.NewEvidenceServiceClient(conn).Read(ctx, &evidencev1.ReadRequest{
			TaskId: "refund-claim-1001", Source: "claims_db", RecordKey: claims.DemoClaim1001, Fields: []string{"receipt_total"},
		})
		if resp != nil {
			t.Errorf("%s: Read returned %v without a kernel", identity, resp)
		}
		return err
	})
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

func TestRunRefusesMissingSource(t *testing.T) {
	dir := t.TempDir()
	cfgPath := servicetest.WriteFile(t, "evidence.yaml", fmt.Sprintf(
		"pki_dir: %s\nkernel: 127.0.0.1:1\nlog_level: error\nsources: {claims_db: {kind: claims, database: %s, provenance: PROVENANCE_TRUSTED}}\n",
		pki.IdentityDir(servicetest.PKI(t), "evidence"), filepath.Join(dir, "missing.db")))
	err := evidence.Run(context.Background(), []string{"--config", cfgPath}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "claims_db") {
		t.Errorf("Run with a missing database = %v, want an error naming the source", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(statErr) {
		t.Error("the read-only adapter created the missing database")
	}
}

// TestRunRefusesImpostorKernel pins the review finding: an evidence
// adapter pointed at a process holding the agent's certificate trusted it
// as its kernel. The handshake now fails on the server's role: no call
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

	dbPath := filepath.Join(t.TempDir(), "claims.db")
	db, err := claims.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := claims.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	cfgPath := servicetest.WriteFile(t, "evidence.yaml", fmt.Sprintf(
		"pki_dir: %s\nkernel: %s\nkernel_timeout: 1s\nlog_level: error\nsources: {claims_db: {kind: claims, database: %s, provenance: PROVENANCE_TRUSTED}}\n",
		pki.IdentityDir(pkiDir, "evidence"), lis.Addr(), dbPath))
	s := servicetest.Start(t, evidence.Run, "--config", cfgPath)
	servicetest.CallAll(t, pkiDir, pki.RoleEvidence, s.Addr, []servicetest.Answer{
		{Identity: "agent", Code: codes.Unavailable, Message: "kernel unreachable: nothing was read"},
	}, func(ctx context.Context, conn *grpc.ClientConn, _ string) error {
		_, err := evidencev1.NewEvidenceServiceClient(conn).Read(ctx, &evidencev1.ReadRequest{
			TaskId: "t", Source: "claims_db", RecordKey: claims.DemoClaim1001, Fields: []string{"receipt_total"},
		})
		return err
	})
	_ = servicetest.Call(t, pkiDir, "agent", pki.RoleEvidence, s.Addr, func(ctx context.Context, conn *grpc.ClientConn) error {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health with an impostor kernel = %v, %v; want NOT_SERVING", resp.GetStatus(), err)
		}
		return nil
	})
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls reached the impostor", n)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}
