package action_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/action"
	"github.com/ambitkernel/ambit/adapters/payments"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// TestRunFailsClosedWithoutKernel starts the real server with a kernel
// address nothing listens on. A valid capability signed with the dev
// kernel key is refused as Unavailable and nothing is paid; a peer of
// another role is refused outright.
func TestRunFailsClosedWithoutKernel(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	pkiDir := filepath.Join(dir, "pki")
	if err := pki.DevInit(pkiDir, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	_ = l.Close()
	dbPath := filepath.Join(dir, "payments.db")
	cfgPath := filepath.Join(dir, "action.yaml")
	cfg := fmt.Sprintf("pki_dir: %s\nkernel: %s\nkernel_timeout: 1s\npayments_database: %s\nlog_level: error\nrecord_sweep_interval: 50ms\n",
		pkiDir, dead, dbPath)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "action.addr")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- action.Run(ctx, []string{"--config", cfgPath, "--addr-file", addrFile}, &bytes.Buffer{})
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; {
		if data, err := os.ReadFile(addrFile); err == nil {
			var addrs map[string]string
			if err := json.Unmarshal(data, &addrs); err != nil {
				t.Fatal(err)
			}
			addr = addrs["grpc"]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no address file")
		}
		time.Sleep(10 * time.Millisecond)
	}

	kernelKey, err := pki.LoadSigningKey(pkiDir, "kernel")
	if err != nil {
		t.Fatal(err)
	}
	capEnv, err := envelope.NewSigner("kernel", kernelKey).Sign(&receiptv1.Capability{
		CapabilityId: "cap-1", TaskId: "refund-claim-1001", Action: refund(1740), Destination: "claimant",
		IdempotencyKey: "idem-1", ExpiresAt: timestamppb.New(time.Now().Add(time.Hour)),
	})
	if err != nil {
		t.Fatal(err)
	}
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
		resp, err := actionv1.NewActionServiceClient(conn).Execute(cctx, request(capEnv, "idem-1", refund(1740)))
		if resp != nil {
			t.Errorf("%s: Execute returned %v without a kernel", identity, resp)
		}
		return err
	}
	for _, tt := range []struct {
		identity string
		code     codes.Code
		msg      string
	}{
		{"agent", codes.Unavailable, "kernel unreachable: nothing was executed"},
		{"agent", codes.Unavailable, "kernel unreachable: nothing was executed"},
		{"governance", codes.PermissionDenied, "method requires role agent"},
		{"evidence", codes.PermissionDenied, "method requires role agent"},
	} {
		st := status.Convert(call(tt.identity))
		if st.Code() != tt.code || st.Message() != tt.msg {
			t.Errorf("%s: Execute = %v %q, want %v %q", tt.identity, st.Code(), st.Message(), tt.code, tt.msg)
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
	ledger, err := payments.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	if p, err := ledger.ByKey(context.Background(), "idem-1"); err == nil {
		t.Errorf("payment %s exists though the kernel was unreachable", p.PaymentID)
	}
}
