package evidence_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/adapters/evidence"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func waitAddr(t *testing.T, path string, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("Run ended before it was ready: %v", err)
		default:
		}
		data, err := os.ReadFile(path)
		if err == nil {
			var addrs map[string]string
			if err := json.Unmarshal(data, &addrs); err != nil {
				t.Fatal(err)
			}
			return addrs["grpc"]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no address file")
	return ""
}

// TestRunFailsClosedWithoutKernel starts the real server (mutual TLS, role
// policy) with a kernel address nothing listens on: an agent's read is
// refused as Unavailable and a peer of another role is refused outright.
func TestRunFailsClosedWithoutKernel(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	pkiDir := filepath.Join(dir, "pki")
	if err := pki.DevInit(pkiDir, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "claims.db")
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
	cfgPath := filepath.Join(dir, "evidence.yaml")
	cfg := fmt.Sprintf(`
pki_dir: %s
kernel: %s
kernel_timeout: 1s
log_level: error
reflection: true
sources:
  claims_db: {kind: claims, database: %s, provenance: PROVENANCE_TRUSTED}
`, pkiDir, deadAddr(t), dbPath)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "evidence.addr")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- evidence.Run(runCtx, []string{"--config", cfgPath, "--listen", "127.0.0.1:0", "--addr-file", addrFile}, &bytes.Buffer{})
	}()
	addr := waitAddr(t, addrFile, done)

	call := func(identity string) error {
		tlsCfg, err := pki.ClientTLS(pkiDir, identity)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := serve.Dial(ctx, addr, tlsCfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		resp, err := evidencev1.NewEvidenceServiceClient(conn).Read(cctx, &evidencev1.ReadRequest{
			TaskId: "refund-claim-1001", Source: "claims_db", RecordKey: claims.DemoClaim1001, Fields: []string{"receipt_total"},
		})
		if resp != nil {
			t.Errorf("%s: Read returned %v without a kernel", identity, resp)
		}
		return err
	}
	tests := []struct {
		identity string
		code     codes.Code
		msg      string
	}{
		{"agent", codes.Unavailable, "kernel unreachable: nothing was read"},
		{"governance", codes.Unavailable, "kernel unreachable: nothing was read"},
		{"verifier", codes.PermissionDenied, "method requires role agent or governance"},
		{"action", codes.PermissionDenied, "method requires role agent or governance"},
	}
	for _, tt := range tests {
		st := status.Convert(call(tt.identity))
		if st.Code() != tt.code || st.Message() != tt.msg {
			t.Errorf("%s: Read = %v %q, want %v %q", tt.identity, st.Code(), st.Message(), tt.code, tt.msg)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil after cancellation", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not stop")
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
	pkiDir := filepath.Join(dir, "pki")
	if err := pki.DevInit(pkiDir, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "evidence.yaml")
	cfg := fmt.Sprintf("pki_dir: %s\nkernel: 127.0.0.1:1\nlog_level: error\nsources: {claims_db: {kind: claims, database: %s, provenance: PROVENANCE_TRUSTED}}\n",
		pkiDir, filepath.Join(dir, "missing.db"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	err := evidence.Run(context.Background(), []string{"--config", cfgPath}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "claims_db") {
		t.Errorf("Run with a missing database = %v, want an error naming the source", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(statErr) {
		t.Error("the read-only adapter created the missing database")
	}
}
