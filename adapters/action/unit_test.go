package action_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/adapters/action"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

func TestValidateExecute(t *testing.T) {
	capEnv := &receiptv1.Envelope{PayloadType: "ambit.receipt.v1.Capability"}
	withRefund := func(mut func(r *contractv1.Refund)) *contractv1.Action {
		a := refund(1740)
		mut(a.GetRefund())
		return a
	}
	tests := []struct {
		name    string
		req     *actionv1.ExecuteRequest
		wantErr error
		want    []string
	}{
		{name: "valid", req: request(capEnv, "k", refund(1740))},
		{name: "nil request", req: nil, wantErr: action.ErrInvalidRequest, want: []string{"capability is required", "action is required", "idempotency_key is required"}},
		{name: "no capability", req: request(nil, "k", refund(1740)), wantErr: action.ErrInvalidRequest, want: []string{"capability is required"}},
		{name: "no action", req: request(capEnv, "k", nil), wantErr: action.ErrInvalidRequest, want: []string{"action is required"}},
		{name: "action without type", req: request(capEnv, "k", &contractv1.Action{}), wantErr: action.ErrInvalidRequest, want: []string{"action has no type"}},
		{name: "no idempotency key", req: request(capEnv, "", refund(1740)), wantErr: action.ErrInvalidRequest, want: []string{"idempotency_key is required"}},
		{name: "no claim", req: request(capEnv, "k", withRefund(func(r *contractv1.Refund) { r.ClaimId = "" })), wantErr: action.ErrInvalidRequest, want: []string{"refund.claim_id"}},
		{name: "no payee", req: request(capEnv, "k", withRefund(func(r *contractv1.Refund) { r.PayeeId = "" })), wantErr: action.ErrInvalidRequest, want: []string{"refund.payee_id"}},
		{name: "zero amount", req: request(capEnv, "k", refund(0)), wantErr: action.ErrInvalidRequest, want: []string{"refund.amount", "positive"}},
		{name: "negative amount", req: request(capEnv, "k", refund(-1)), wantErr: action.ErrInvalidRequest, want: []string{"refund.amount", "negative"}},
		{name: "no amount", req: request(capEnv, "k", withRefund(func(r *contractv1.Refund) { r.Amount = nil })), wantErr: action.ErrInvalidRequest, want: []string{"refund.amount"}},
		{name: "unknown currency", req: request(capEnv, "k", withRefund(func(r *contractv1.Refund) { r.Amount.CurrencyCode = "XBT" })), wantErr: action.ErrInvalidRequest, want: []string{`"XBT"`}},
		{
			name: "email has no executor",
			req: request(capEnv, "k", &contractv1.Action{Kind: &contractv1.Action_EmailAttachment{
				EmailAttachment: &contractv1.EmailAttachment{Recipient: "payouts@evil.example"}}}),
			wantErr: action.ErrNoExecutor, want: []string{"no executor for action type email_attachment"},
		},
		{
			name: "policy change has no executor",
			req: request(nil, "", &contractv1.Action{Kind: &contractv1.Action_ChangePolicy{
				ChangePolicy: &contractv1.ChangePolicy{PolicyId: "p"}}}),
			wantErr: action.ErrNoExecutor, want: []string{"change_policy"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := action.ValidateExecute(tt.req)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("ValidateExecute = %v, want %v", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestActionType(t *testing.T) {
	if got := action.ActionType(refund(1)); got != "refund" {
		t.Errorf("ActionType(refund) = %q", got)
	}
	if got := action.ActionType(&contractv1.Action{}); got != "" {
		t.Errorf("ActionType(empty) = %q", got)
	}
}

func TestLoadConfig(t *testing.T) {
	write := func(t *testing.T, body string) string { return servicetest.WriteFile(t, "action.yaml", body) }
	got, err := action.LoadConfig(write(t, `
identity: action
pki_dir: pki
listen: 127.0.0.1:7201
addr_file: action.addr
kernel: 127.0.0.1:7001
kernel_timeout: 1s
kernel_key: kernel
payments_database: payments.db
claims_database: claims.db
log_level: warn
shutdown_grace: 2s
reflection: true
record_sweep_interval: 250ms
`))
	if err != nil {
		t.Fatal(err)
	}
	want := action.Config{
		Config: service.Config{
			Common: service.Common{Identity: "action", PKIDir: "pki", AddrFile: "action.addr", LogLevel: "warn", ShutdownGrace: config.Duration(2 * time.Second), Reflection: true, HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff},
			Listen: "127.0.0.1:7201", Kernel: "127.0.0.1:7001", KernelTimeout: config.Duration(time.Second),
		},
		KernelKey: "kernel", PaymentsDatabase: "payments.db", ClaimsDatabase: "claims.db", RecordSweepInterval: config.Duration(250 * time.Millisecond),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadConfig (-want +got):\n%s", diff)
	}
	minimal, err := action.LoadConfig(write(t, "pki_dir: p\nkernel: k\npayments_database: d\n"))
	if err != nil {
		t.Fatal(err)
	}
	wantMin := action.Config{
		Config: service.Config{
			Common: service.Common{Identity: "action", PKIDir: "p", ShutdownGrace: config.Duration(10 * time.Second), HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff},
			Listen: "127.0.0.1:0", Kernel: "k", KernelTimeout: config.Duration(3 * time.Second),
		},
		KernelKey: "kernel", PaymentsDatabase: "d", RecordSweepInterval: config.Duration(5 * time.Second),
	}
	if diff := cmp.Diff(wantMin, minimal); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"unknown key":      {"pki_dir: p\nkernel: k\npayments_database: d\npayment_database: d\n", []string{"payment_database"}},
		"missing required": {"log_level: info\n", []string{"pki_dir", "kernel", "payments_database"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := action.LoadConfig(write(t, tc.body))
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
