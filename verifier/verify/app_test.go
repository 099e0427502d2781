package verify_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
	"github.com/ambitkernel/ambit/verifier/verify"
)

// TestRunFailsClosedWithoutKernel starts the real server with a kernel
// address nothing listens on: a verification whose readback cannot be
// recorded returns no receipt, and peers of other roles are refused.
func TestRunFailsClosedWithoutKernel(t *testing.T) {
	defer goleak.VerifyNone(t)
	pkiDir := servicetest.PKI(t)
	ledger := writeLedger(t, payment{"pay-1", "idem-1", "C-1001", "employee-7", 1740})
	cfgPath := servicetest.WriteFile(t, "verifier.yaml", fmt.Sprintf(
		"pki_dir: %s\nkernel: %s\nkernel_timeout: 1s\npayments_database: %s\nlog_level: error\n", pki.IdentityDir(pkiDir, "verifier"), servicetest.DeadAddr(t), ledger))
	s := servicetest.Start(t, verify.Run, "--config", cfgPath, "--listen", "127.0.0.1:0")

	kernelKey, err := pki.LoadSigningKey(pki.IdentityDir(pkiDir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	actionKey, err := pki.LoadSigningKey(pki.IdentityDir(pkiDir, "action"), "action")
	if err != nil {
		t.Fatal(err)
	}
	capEnv, effEnv := signers{kernel: envelope.NewSigner("kernel", kernelKey), action: envelope.NewSigner("action", actionKey)}.envelopes(t, nil)

	servicetest.CallAll(t, pkiDir, pki.RoleVerifier, s.Addr, []servicetest.Answer{
		{Identity: "agent", Code: codes.Unavailable, Message: "kernel unreachable: the readback was not recorded"},
		{Identity: "governance", Code: codes.Unavailable, Message: "kernel unreachable: the readback was not recorded"},
		{Identity: "action", Code: codes.PermissionDenied, Message: "method requires role agent or governance"},
	}, func(ctx context.Context, conn *grpc.ClientConn, identity string) error {
		resp, err := verifierv1.NewVerifierServiceClient(conn).Verify(ctx, &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv})
		if resp != nil {
			t.Errorf("%s: Verify returned %v without a kernel", identity, resp)
		}
		return err
	})
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancellation", err)
	}
}

func TestLoadConfig(t *testing.T) {
	write := func(body string) string { return servicetest.WriteFile(t, "verifier.yaml", body) }
	got, err := verify.LoadConfig(write("pki_dir: p\nkernel: k\npayments_database: d\nreflection: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := verify.Config{
		Config: service.Config{
			Common: service.Common{Identity: "verifier", PKIDir: "p", ShutdownGrace: config.Duration(10 * time.Second), Reflection: true, HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff},
			Listen: "127.0.0.1:0", Kernel: "k", KernelTimeout: config.Duration(3 * time.Second),
		},
		KernelKey: "kernel", ActionKey: "action", PaymentsDatabase: "d",
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
