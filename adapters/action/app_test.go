package action_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/action"
	"github.com/ambitkernel/ambit/adapters/payments"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

// TestRunFailsClosedWithoutKernel starts the real server with a kernel
// address nothing listens on. A valid capability signed with the dev
// kernel key is refused as Unavailable and nothing is paid; a peer of
// another role is refused outright.
func TestRunFailsClosedWithoutKernel(t *testing.T) {
	defer goleak.VerifyNone(t)
	pkiDir := servicetest.PKI(t)
	dbPath := filepath.Join(t.TempDir(), "payments.db")
	cfgPath := servicetest.WriteFile(t, "action.yaml", fmt.Sprintf(
		"pki_dir: %s\nkernel: %s\nkernel_timeout: 1s\npayments_database: %s\nlog_level: error\nrecord_sweep_interval: 50ms\n",
		pki.IdentityDir(pkiDir, "action"), servicetest.DeadAddr(t), dbPath))
	s := servicetest.Start(t, action.Run, "--config", cfgPath)

	kernelKey, err := pki.LoadSigningKey(pki.IdentityDir(pkiDir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	capEnv, err := envelope.NewSigner("kernel", kernelKey).Sign(&receiptv1.Capability{
		CapabilityId: "cap-1", TaskId: "refund-claim-1001", Action: refund(1740), Destination: "claimant",
		IdempotencyKey: "idem-1", ExpiresAt: timestamppb.New(time.Now().Add(time.Hour)), Holder: "agent",
	})
	if err != nil {
		t.Fatal(err)
	}
	servicetest.CallAll(t, pkiDir, pki.RoleAction, s.Addr, []servicetest.Answer{
		{Identity: "agent", Code: codes.Unavailable, Message: "kernel unreachable: nothing was executed"},
		{Identity: "agent", Code: codes.Unavailable, Message: "kernel unreachable: nothing was executed"},
		{Identity: "governance", Code: codes.PermissionDenied, Message: "method requires role agent"},
		{Identity: "evidence", Code: codes.PermissionDenied, Message: "method requires role agent"},
	}, func(ctx context.Context, conn *grpc.ClientConn, identity string) error {
		resp, err := actionv1.NewActionServiceClient(conn).Execute(ctx, request(capEnv, "idem-1", refund(1740)))
		if resp != nil {
			t.Errorf("%s: Execute returned %v without a kernel", identity, resp)
		}
		return err
	})
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancellation", err)
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

// TestRunRefusesMissingClaimsDatabase: a claims_database that cannot be
// read stops the start, naming the key, and is not created.
func TestRunRefusesMissingClaimsDatabase(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "claims.db")
	cfgPath := servicetest.WriteFile(t, "action.yaml", fmt.Sprintf(
		"pki_dir: %s\nkernel: 127.0.0.1:1\npayments_database: %s\nclaims_database: %s\nlog_level: error\n",
		pki.IdentityDir(servicetest.PKI(t), "action"), filepath.Join(dir, "payments.db"), missing))
	err := action.Run(context.Background(), []string{"--config", cfgPath}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "claims_database") {
		t.Errorf("Run with a missing claims database = %v, want an error naming claims_database", err)
	}
	if _, statErr := os.Stat(missing); !os.IsNotExist(statErr) {
		t.Error("the adapter created the missing claims database")
	}
}
