package verify_test

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

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/verifier/verify"
)

// TestRunFailsClosedWithoutKernel starts the real server with a kernel
// address nothing listens on: a verification whose readback cannot be
// recorded returns no receipt, and peers of other roles are refused.
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
	ledger := writeLedger(t, payment{"pay-1", "idem-1", "C-1001", "employee-7", 1740})
	cfgPath := filepath.Join(dir, "verifier.yaml")
	cfg := fmt.Sprintf("pki_dir: %s\nkernel: %s\nkernel_timeout: 1s\npayments_database: %s\nlog_level: error\n", pkiDir, dead, ledger)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "verifier.addr")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- verify.Run(ctx, []string{"--config", cfgPath, "--listen", "127.0.0.1:0", "--addr-file", addrFile}, &bytes.Buffer{})
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(addrFile); err == nil {
			var addrs map[string]string
			if err := json.Unmarshal(data, &addrs); err != nil {
				t.Fatal(err)
			}
			addr = addrs["grpc"]
		}
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no address file")
		}
	}

	kernelKey, err := pki.LoadSigningKey(pkiDir, "kernel")
	if err != nil {
		t.Fatal(err)
	}
	actionKey, err := pki.LoadSigningKey(pkiDir, "action")
	if err != nil {
		t.Fatal(err)
	}
	s := signers{kernel: envelope.NewSigner("kernel", kernelKey), action: envelope.NewSigner("action", actionKey)}
	capEnv, effEnv := s.envelopes(t, nil)

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
		resp, err := verifierv1.NewVerifierServiceClient(conn).Verify(cctx, &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv})
		if resp != nil {
			t.Errorf("%s: Verify returned %v without a kernel", identity, resp)
		}
		return err
	}
	for _, tt := range []struct {
		identity string
		code     codes.Code
		msg      string
	}{
		{"agent", codes.Unavailable, "kernel unreachable: the readback was not recorded"},
		{"governance", codes.Unavailable, "kernel unreachable: the readback was not recorded"},
		{"action", codes.PermissionDenied, "method requires role agent or governance"},
	} {
		st := status.Convert(call(tt.identity))
		if st.Code() != tt.code || st.Message() != tt.msg {
			t.Errorf("%s: Verify = %v %q, want %v %q", tt.identity, st.Code(), st.Message(), tt.code, tt.msg)
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

func TestLoadConfig(t *testing.T) {
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "verifier.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := verify.LoadConfig(write("pki_dir: p\nkernel: k\npayments_database: d\nreflection: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := verify.Config{
		Identity: "verifier", PKIDir: "p", Listen: "127.0.0.1:0", Kernel: "k", KernelTimeout: config.Duration(3 * time.Second),
		KernelKey: "kernel", ActionKey: "action", PaymentsDatabase: "d", ShutdownGrace: config.Duration(10 * time.Second),
		Reflection: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadConfig (-want +got):\n%s", diff)
	}
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"unknown key":      {"pki_dir: p\nkernel: k\npayments_database: d\nverbose: true\n", []string{"verbose"}},
		"missing required": {"log_level: info\n", []string{"pki_dir", "kernel", "payments_database"}},
		"one key for both": {"pki_dir: p\nkernel: k\npayments_database: d\naction_key: kernel\n", []string{`both "kernel"`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := verify.LoadConfig(write(tc.body))
			if err == nil {
				t.Fatal("LoadConfig succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
