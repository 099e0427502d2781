package verify_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/verifier/readback"
	"github.com/ambitkernel/ambit/verifier/verify"
)

// readbacksYAML declares the refund readback over database and the credit
// readback over the MCP server at url, as an operator writes them.
func readbacksYAML(database, url string) string {
	return fmt.Sprintf(`readbacks:
  refund:
    sql:
      database: %s
      table: payments
      key_column: idempotency_key
      columns: [payment_id, claim_id, payee_id, currency, amount_minor, destination]
    checks:
      - {code: NOT_EXACTLY_ONE_EFFECT, expression: "size(rows) == 1"}
      - {code: AMOUNT_MISMATCH, expression: "rows[0].amount_minor == args.amount.minor_units"}
  issue_credit:
    mcp:
      server: {url: "%s"}
      tool: get_credit
      arguments: {idempotency_key: effect.idempotency_key}
      rows: result.credits
    checks:
      - {code: NOT_EXACTLY_ONE_EFFECT, expression: "size(rows) == 1"}
`, database, url)
}

// TestRunFailsClosedWithoutKernel starts the real server with a kernel
// address nothing listens on: a verification whose readback cannot be
// recorded returns no receipt, and peers of other roles are refused.
func TestRunFailsClosedWithoutKernel(t *testing.T) {
	pkiDir := servicetest.PKI(t)
	cfgPath := servicetest.WriteFile(t, "verifier.yaml", fmt.Sprintf(
		"pki_dir: %s\nkernel: %s\nkernel_timeout: 1s\nlog_level: error\n%s", pki.IdentityDir(pkiDir, "verifier"), servicetest.DeadAddr(t),
		readbacksYAML(writePayments(t, paid), creditServer(t, issued))))
	s := servicetest.Start(t, verify.Run, "--config", cfgPath, "--listen", "127.0.0.1:0")

	kernelKey, err := pki.LoadSigningKey(pki.IdentityDir(pkiDir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	actionKey, err := pki.LoadSigningKey(pki.IdentityDir(pkiDir, "action"), "action")
	if err != nil {
		t.Fatal(err)
	}
	signed := signers{kernel: envelope.NewSigner("kernel", kernelKey), action: envelope.NewSigner("action", actionKey)}
	for _, effect := range []struct {
		call *contractv1.ToolCall
		ref  string
	}{{refundCall, "pay-1"}, {creditCall, "cr-1"}} {
		capEnv, effEnv := signed.envelopes(t, effect.call, effect.ref, nil)
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
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancellation", err)
	}
}

// TestRunRefusesToStart: a readback whose table, column or server is not
// there stops the start, naming the key path.
func TestRunRefusesToStart(t *testing.T) {
	pkiDir := servicetest.PKI(t)
	payments := writePayments(t)
	other := filepath.Join(t.TempDir(), "other.db")
	db, err := sqldb.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE other (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	for name, tc := range map[string]struct {
		database, url string
		want          []string
	}{
		"unknown table": {database: other, url: creditServer(t),
			want: []string{`readbacks.refund.sql.table: no table "payments"`}},
		"unreachable server": {database: payments, url: "http://" + servicetest.DeadAddr(t) + "/mcp",
			want: []string{"readbacks.issue_credit.mcp.server: connect to mcp server"}},
	} {
		t.Run(name, func(t *testing.T) {
			cfgPath := servicetest.WriteFile(t, "verifier.yaml", fmt.Sprintf(
				"pki_dir: %s\nkernel: %s\nlog_level: error\n%s", pki.IdentityDir(pkiDir, "verifier"), servicetest.DeadAddr(t), readbacksYAML(tc.database, tc.url)))
			ctx, cancel := context.WithTimeout(context.Background(), servicetest.Wait)
			defer cancel()
			err := verify.Run(ctx, []string{"--config", cfgPath}, io.Discard)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Run = %v, want an error naming %q", err, w)
				}
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	write := func(body string) string { return servicetest.WriteFile(t, "verifier.yaml", body) }
	got, err := verify.LoadConfig(write("pki_dir: p\nkernel: k\nreflection: true\n" + readbacksYAML("payments.db", "http://127.0.0.1:9000/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	want := verify.Config{
		Config: service.Config{
			Common: service.Common{Identity: "verifier", PKIDir: "p", ShutdownGrace: config.Duration(10 * time.Second), Reflection: true, HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff, GCHeadroomMB: service.DefaultGCHeadroomMB},
			Listen: "127.0.0.1:0", Kernel: "k", KernelTimeout: config.Duration(3 * time.Second),
		},
		KernelKey: "kernel", ActionKey: "action", ReadTimeout: config.Duration(5 * time.Second),
		Readbacks: map[string]readback.Spec{
			"refund": {
				SQL: &readback.SQL{Database: "payments.db", Table: "payments", KeyColumn: "idempotency_key",
					Columns: []string{"payment_id", "claim_id", "payee_id", "currency", "amount_minor", "destination"}},
				Checks: []readback.Check{
					{Code: "NOT_EXACTLY_ONE_EFFECT", Expression: "size(rows) == 1"},
					{Code: "AMOUNT_MISMATCH", Expression: "rows[0].amount_minor == args.amount.minor_units"},
				},
			},
			"issue_credit": {
				MCP: &readback.MCP{Server: mcpconn.Config{URL: "http://127.0.0.1:9000/mcp"}, Tool: "get_credit",
					Arguments: map[string]string{"idempotency_key": "effect.idempotency_key"}, Rows: "result.credits"},
				Checks: []readback.Check{{Code: "NOT_EXACTLY_ONE_EFFECT", Expression: "size(rows) == 1"}},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadConfig (-want +got):\n%s", diff)
	}
	const sqlHead = "pki_dir: p\nkernel: k\nreadbacks:\n  refund:\n"
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"unknown key":          {"pki_dir: p\nkernel: k\nverbose: true\n", []string{"verbose"}},
		"unknown readback key": {sqlHead + "    sql: {database: d, table: t, key_column: k, columns: [a], where: x}\n    checks: [{code: A, expression: 'true'}]\n", []string{"where"}},
		"missing required":     {"log_level: info\n", []string{"pki_dir", "kernel", "readbacks: at least one readback is required"}},
		"one key for both":     {"pki_dir: p\nkernel: k\naction_key: kernel\n" + readbacksYAML("d", "http://x"), []string{`both "kernel"`}},
		"neither connector":    {sqlHead + "    checks: [{code: A, expression: 'true'}]\n", []string{"readbacks.refund: declare one connector: sql or mcp"}},
		"both connectors": {sqlHead + "    sql: {database: d, table: t, key_column: k, columns: [a]}\n    mcp: {server: {url: 'http://x'}, tool: t}\n    checks: [{code: A, expression: 'true'}]\n",
			[]string{"readbacks.refund: declare one connector, not both sql and mcp"}},
		"no checks": {sqlHead + "    sql: {database: d, table: t, key_column: k, columns: [a]}\n", []string{"readbacks.refund.checks: at least one check is required"}},
		"duplicate codes": {sqlHead + "    sql: {database: d, table: t, key_column: k, columns: [a]}\n    checks: [{code: A, expression: 'true'}, {code: A, expression: 'false'}]\n",
			[]string{`readbacks.refund.checks[1].code: "A" is declared twice`}},
		"check does not compile": {sqlHead + "    sql: {database: d, table: t, key_column: k, columns: [a]}\n    checks: [{code: A, expression: 'rows[0].a =='}]\n",
			[]string{"readbacks.refund.checks[0].expression: expression does not compile"}},
		"bad table": {sqlHead + "    sql: {database: d, table: 'a b', key_column: k, columns: [a]}\n    checks: [{code: A, expression: 'true'}]\n",
			[]string{`readbacks.refund.sql.table: "a b" is not a plain SQL identifier`}},
		"bad column": {sqlHead + "    sql: {database: d, table: t, key_column: k, columns: [a, 'b;']}\n    checks: [{code: A, expression: 'true'}]\n",
			[]string{`readbacks.refund.sql.columns[1]: "b;" is not a plain SQL identifier`}},
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
