package action_test

import (
	"context"
	"fmt"
	"github.com/ambitkernel/ambit/sdk/serve"
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
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

// appConfig is a configuration for Run with one sql executor writing to
// target and a state check on accounts.
func appConfig(pkiDir, kernel, dir, target, accounts string) string {
	return fmt.Sprintf(`pki_dir: %s
kernel: %s
kernel_timeout: 1s
log_level: error
record_sweep_interval: 50ms
database: %s
executors:
  transfer:
    sql:
      database: %s
      table: transfers
      key_column: idempotency_key
      columns: {transfer_id: effect.id, account: args.account, currency: args.amount.currency_code, amount_minor: args.amount.minor_units, destination: call.destination}
state_checks:
  accounts_db:
    sql: {database: %s, table: accounts, key: account_id, state_version: '"accounts-v" + string(record.row_version)', columns: [row_version]}
`, pkiDir, kernel, filepath.Join(dir, "action.db"), target, accounts)
}

// TestRunFailsClosedWithoutKernel starts the real server with a kernel
// address nothing listens on. A valid capability signed with the dev
// kernel key is refused as Unavailable, with its reason, and nothing is
// executed; a peer of another role is refused outright.
func TestRunFailsClosedWithoutKernel(t *testing.T) {
	defer goleak.VerifyNone(t)
	pkiDir := servicetest.PKI(t)
	dir := t.TempDir()
	target, accounts := filepath.Join(dir, "target.db"), filepath.Join(dir, "accounts.db")
	runSQL(t, target, transfersSchema)
	runSQL(t, accounts, `CREATE TABLE accounts (account_id TEXT PRIMARY KEY, row_version INTEGER)`,
		`INSERT INTO accounts VALUES ('acct-7', 42)`)
	cfgPath := servicetest.WriteFile(t, "action.yaml", appConfig(pki.IdentityDir(pkiDir, "action"), servicetest.DeadAddr(t), dir, target, accounts))
	s := servicetest.Start(t, action.Run, "--config", cfgPath)

	kernelKey, err := pki.LoadSigningKey(pki.IdentityDir(pkiDir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	capEnv, err := envelope.NewSigner("kernel", kernelKey).Sign(&receiptv1.Capability{
		CapabilityId: "cap-1", TaskId: "task-1", Call: toolCall("transfer", transferArgs), Destination: "own_account",
		Record: "accounts_db/acct-7", StateVersion: "accounts-v42",
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
		resp, err := actionv1.NewActionServiceClient(conn).Execute(ctx, request(capEnv, "idem-1"))
		if resp != nil {
			t.Errorf("%s: Execute returned %v without a kernel", identity, resp)
		}
		if identity == "agent" && serve.Reason(err) != errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE {
			t.Errorf("reason %v, want KERNEL_UNAVAILABLE", serve.Reason(err))
		}
		return err
	})
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancellation", err)
	}
	if rows := transfers(t, target); len(rows) != 0 {
		t.Errorf("transfers %v exist though the kernel was unreachable", rows)
	}
}

// TestRunRefusesTargetsThatCannotWork: a configuration whose target table
// or state check database cannot serve stops the start, naming the key
// path, and creates nothing.
func TestRunRefusesTargetsThatCannotWork(t *testing.T) {
	pkiDir := servicetest.PKI(t)
	for name, tc := range map[string]struct {
		target, accounts func(dir string) string
		want             string
	}{
		"target table missing": {
			target: func(dir string) string {
				p := filepath.Join(dir, "target.db")
				runSQL(t, p, `CREATE TABLE other (x TEXT)`)
				return p
			},
			want: `executors.transfer.sql.table:`,
		},
		"state check database missing": {
			accounts: func(dir string) string { return filepath.Join(dir, "accounts.db") },
			want:     "state_checks.accounts_db.sql.database:",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "target.db")
			runSQL(t, target, transfersSchema)
			if tc.target != nil {
				target = tc.target(t.TempDir())
			}
			accounts := filepath.Join(dir, "accounts.db")
			runSQL(t, accounts, `CREATE TABLE accounts (account_id TEXT PRIMARY KEY, row_version INTEGER)`)
			if tc.accounts != nil {
				accounts = tc.accounts(t.TempDir())
			}
			cfgPath := servicetest.WriteFile(t, "action.yaml", appConfig(pki.IdentityDir(pkiDir, "action"), "127.0.0.1:1", dir, target, accounts))
			err := action.Run(context.Background(), []string{"--config", cfgPath}, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want an error naming %s", err, tc.want)
			}
			if tc.accounts != nil {
				if _, statErr := os.Stat(accounts); !os.IsNotExist(statErr) {
					t.Error("the adapter created the missing state check database")
				}
			}
		})
	}
}
