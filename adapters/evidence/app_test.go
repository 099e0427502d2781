package evidence_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ambitkernel/ambit/adapters/evidence"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

func appConfig(t *testing.T, pkiDir, kernelAddr, dbPath, ticketsURL string) string {
	t.Helper()
	return servicetest.WriteFile(t, "evidence.yaml", fmt.Sprintf(`
pki_dir: %s
kernel: %s
kernel_timeout: 1s
log_level: error
watch_interval: 20ms
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
`, pkiDir, kernelAddr, dbPath, ticketsURL))
}

// TestRunServesAndFailsClosedWithoutKernel starts the real server (mutual
// TLS, role policy, declared SQL and MCP sources) with a kernel address
// nothing listens on: an agent's read is refused as Unavailable, a peer of
// another role is refused outright, and health follows the sources.
func TestRunServesAndFailsClosedWithoutKernel(t *testing.T) {
	// Registered first, so it runs last: after the test's servers, whose
	// idle connections end with them, are closed.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	pkiDir := servicetest.PKI(t)
	dbPath, db := database(t)
	ts := ticketServer(t)
	s := servicetest.Start(t, evidence.Run, "--config", appConfig(t, pkiDir, servicetest.DeadAddr(t), dbPath, ts.URL), "--listen", "127.0.0.1:0")

	servicetest.CallAll(t, pkiDir, s.Addr, []servicetest.Answer{
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

	health := func() healthpb.HealthCheckResponse_ServingStatus {
		var st healthpb.HealthCheckResponse_ServingStatus
		err := servicetest.Call(t, pkiDir, "agent", s.Addr, func(ctx context.Context, conn *grpc.ClientConn) error {
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: evidencev1.EvidenceService_ServiceDesc.ServiceName})
			st = resp.GetStatus()
			return err
		})
		if err != nil {
			t.Fatalf("health check: %v", err)
		}
		return st
	}
	if st := health(); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health = %v, want SERVING", st)
	}
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
