package verify_test

import (
	"context"
	"fmt"
	"github.com/ambitkernel/ambit/sdk/serve"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/verifier/readback"
	"github.com/ambitkernel/ambit/verifier/verify"
)

func newHandler(t *testing.T, s signers, k *kernel, specs map[string]readback.Spec) *verify.Handler {
	t.Helper()
	set, err := readback.Open(context.Background(), verify.ReadbacksKey, specs, "verifier")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	core, err := verify.NewCore(verify.Deps{
		Issuer: service.Issuer{
			Identity: "verifier", Signer: s.verifier, Log: zap.NewNop(),
			Now: func() time.Time { return readAt }, NewID: func() string { return "0001" },
		},
		Keys:        envelope.Keyring{"kernel": s.kernelPub, "action": s.actionPub},
		KernelKeyID: "kernel", ActionKeyID: "action",
		Kernel: k, KernelTimeout: time.Second, Readbacks: set, ReadTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return verify.NewHandler(core)
}

const (
	verified = receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED
	mismatch = receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH
)

func TestVerify(t *testing.T) {
	tests := []struct {
		name     string
		call     *contractv1.ToolCall
		ref      string    // the effect receipt's record_ref
		payments []payment // rows of the SQL target
		credits  []credit  // records of the MCP upstream
		status   receiptv1.ReadbackStatus
		findings []string
		found    int32
	}{
		{name: "sql: verified", call: refundCall, ref: "pay-1", payments: []payment{paid}, status: verified, found: 1},
		{name: "sql: edited row", call: refundCall, ref: "pay-1", payments: []payment{{"pay-1", "idem-1", "C-1001", "employee-8", 1740}},
			status: mismatch, found: 1, findings: []string{"PAYEE_MISMATCH"}},
		{name: "sql: missing row", call: refundCall, ref: "pay-1",
			payments: []payment{{"pay-1", "idem-0", "C-1001", "employee-7", 1740}},
			status:   mismatch, found: 0, findings: []string{"NOT_EXACTLY_ONE_EFFECT", "AMOUNT_MISMATCH:unevaluable"}},
		{name: "sql: two rows", call: refundCall, ref: "pay-1", payments: []payment{paid, {"pay-2", "idem-1", "C-1001", "employee-7", 1740}},
			status: mismatch, found: 2, findings: []string{"NOT_EXACTLY_ONE_EFFECT", "RECORD_REF_MISMATCH"}},
		{name: "sql: wrong amount", call: refundCall, ref: "pay-1", payments: []payment{{"pay-1", "idem-1", "C-1001", "employee-7", 1741}},
			status: mismatch, found: 1, findings: []string{"AMOUNT_MISMATCH", "AMOUNT_ABOVE_GRANT"}},
		{name: "sql: another effect's record", call: refundCall, ref: "pay-7", payments: []payment{paid},
			status: mismatch, found: 1, findings: []string{"RECORD_REF_MISMATCH"}},
		// SQLite keeps a text in an INTEGER column: an order comparison
		// with the granted amount cannot be evaluated, which is a finding,
		// never a pass.
		{name: "sql: unevaluable check", call: refundCall, ref: "pay-1", payments: []payment{{"pay-1", "idem-1", "C-1001", "employee-7", "lots"}},
			status: mismatch, found: 1, findings: []string{"AMOUNT_MISMATCH", "AMOUNT_ABOVE_GRANT:unevaluable"}},
		{name: "mcp: verified", call: creditCall, ref: "cr-1", credits: []credit{issued}, status: verified, found: 1},
		{name: "mcp: wrong amount", call: creditCall, ref: "cr-1", credits: []credit{{"cr-1", "T-9", 5000, "idem-1"}},
			status: mismatch, found: 1, findings: []string{"AMOUNT_MISMATCH"}},
		{name: "mcp: missing", call: creditCall, ref: "cr-1", credits: []credit{{"cr-1", "T-9", 500, "idem-0"}},
			status: mismatch, found: 0, findings: []string{"NOT_EXACTLY_ONE_EFFECT"}},
		{name: "mcp: two records", call: creditCall, ref: "cr-1", credits: []credit{issued, {"cr-2", "T-8", 500, "idem-1"}},
			status: mismatch, found: 2, findings: []string{"NOT_EXACTLY_ONE_EFFECT", "TICKET_MISMATCH", "RECORD_REF_MISMATCH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSigners(t)
			k := &kernel{}
			h := newHandler(t, s, k, map[string]readback.Spec{
				"refund":       refundReadback(writePayments(t, tt.payments...)),
				"issue_credit": creditReadback(creditServer(t, tt.credits...), "effect.idempotency_key"),
			})
			capEnv, effEnv := s.envelopes(t, tt.call, tt.ref, nil)
			resp, err := h.Verify(context.Background(), &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv})
			if err != nil {
				t.Fatal(err)
			}
			want := &receiptv1.ReadbackReceipt{
				ReceiptId: "rb-0001", CapabilityId: "cap-1", EffectReceiptId: "eff-1", TaskId: "task-1",
				IdempotencyKey: "idem-1", Status: tt.status, Findings: tt.findings, RecordsFound: tt.found,
				ReadAt: timestamppb.New(readAt), Issuer: "verifier",
			}
			if diff := cmp.Diff(want, resp.GetReceipt(), protocmp.Transform()); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			var opened receiptv1.ReadbackReceipt
			if err := (envelope.Keyring{"verifier": s.verifPub}).Open(resp.GetSignedReceipt(), "verifier", &opened); err != nil {
				t.Fatalf("signed receipt does not verify: %v", err)
			}
			if !proto.Equal(&opened, want) {
				t.Error("signed payload differs from the receipt")
			}
			if len(k.recorded) != 1 || !proto.Equal(k.recorded[0], resp.GetSignedReceipt()) {
				t.Error("the kernel did not record exactly the returned receipt")
			}
		})
	}
}

func TestVerifyRefusals(t *testing.T) {
	s := newSigners(t)
	other := newSigners(t)
	capEnv, effEnv := s.envelopes(t, refundCall, "pay-1", nil)
	forgedCap, forgedEff := other.envelopes(t, refundCall, "pay-1", nil)
	// An effect receipt signed with the kernel's key is still not the
	// action adapter's.
	kernelSignedEff, err := s.kernel.Sign(effectOf(refundCall, "pay-1"))
	if err != nil {
		t.Fatal(err)
	}
	kernelSignedEff.KeyId = "action"
	_, otherEffect := s.envelopes(t, refundCall, "pay-1", func(e *receiptv1.EffectReceipt) {
		e.CapabilityId, e.IdempotencyKey = "cap-2", "idem-2"
		e.Call = &contractv1.ToolCall{Tool: "refund", ArgumentsJson: `{"claim_id":"C-1001","payee_id":"employee-7","amount":{"minor_units":9999,"currency_code":"GBP"}}`}
	})
	// The same arguments written in another order are the same call.
	_, reordered := s.envelopes(t, refundCall, "pay-1", func(e *receiptv1.EffectReceipt) {
		e.Call = &contractv1.ToolCall{Tool: "refund", ArgumentsJson: `{"payee_id": "employee-7", "claim_id": "C-1001", "amount": {"minor_units": 1740, "currency_code": "GBP"}}`}
	})
	notifyCap, notifyEff := s.envelopes(t, &contractv1.ToolCall{Tool: "notify", ArgumentsJson: `{"text":"done"}`}, "n-1", nil)
	creditCap, creditEff := s.envelopes(t, creditCall, "cr-1", nil)

	refunds := func(t *testing.T) string { return writePayments(t, paid) }
	tests := []struct {
		name     string
		req      *verifierv1.VerifyRequest
		kernel   *kernel
		specs    func(t *testing.T) map[string]readback.Spec
		after    func(t *testing.T, specs map[string]readback.Spec) // runs after the start
		code     codes.Code
		msg      string
		reason   errorv1.ErrorReason
		recorded bool
	}{
		{name: "no envelopes", req: &verifierv1.VerifyRequest{}, code: codes.InvalidArgument,
			msg: "invalid request: capability is required; effect_receipt is required", reason: errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST},
		{name: "forged capability", req: &verifierv1.VerifyRequest{Capability: forgedCap, EffectReceipt: effEnv},
			code: codes.PermissionDenied, msg: "capability does not verify", reason: errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID},
		{name: "forged effect receipt", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: forgedEff},
			code: codes.InvalidArgument, msg: "effect receipt does not verify", reason: errorv1.ErrorReason_ERROR_REASON_RECEIPT_INVALID},
		{name: "effect receipt under the wrong key", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: kernelSignedEff},
			code: codes.InvalidArgument, msg: "effect receipt does not verify", reason: errorv1.ErrorReason_ERROR_REASON_RECEIPT_INVALID},
		{name: "capability and receipt swapped", req: &verifierv1.VerifyRequest{Capability: effEnv, EffectReceipt: capEnv},
			code: codes.PermissionDenied, msg: "capability does not verify", reason: errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID},
		{name: "effect receipt of another effect", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: otherEffect},
			code: codes.InvalidArgument, reason: errorv1.ErrorReason_ERROR_REASON_RECEIPT_MISMATCH,
			msg: `effect receipt does not match the capability: capability_id "cap-2" is not the capability's "cap-1"; ` +
				`idempotency_key "idem-2" is not the capability's "idem-1"; call.arguments_json differ from the capability's`},
		{name: "no readback for the tool", req: &verifierv1.VerifyRequest{Capability: notifyCap, EffectReceipt: notifyEff},
			code: codes.Unimplemented, msg: `no readback is declared for the tool: "notify"`, reason: errorv1.ErrorReason_ERROR_REASON_NO_READBACK},
		{name: "an argument mapping that does not evaluate", req: &verifierv1.VerifyRequest{Capability: creditCap, EffectReceipt: creditEff},
			specs: func(t *testing.T) map[string]readback.Spec {
				return map[string]readback.Spec{"issue_credit": creditReadback(creditServer(t, issued), "args.ticket")}
			},
			code: codes.InvalidArgument, msg: "the capability's call does not fit its tool's readback: nothing was verified", reason: errorv1.ErrorReason_ERROR_REASON_ARGUMENTS_INVALID},
		{name: "sql source unreadable", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv},
			specs: func(t *testing.T) map[string]readback.Spec {
				return map[string]readback.Spec{"refund": refundReadback(refunds(t))}
			},
			after: func(t *testing.T, specs map[string]readback.Spec) {
				db, err := sqldb.Open(specs["refund"].SQL.Database)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(`DROP TABLE payments`); err != nil {
					t.Fatal(err)
				}
			},
			code: codes.Unavailable, msg: "readback source unreadable: nothing was verified", reason: errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE},
		{name: "mcp source refuses", req: &verifierv1.VerifyRequest{Capability: creditCap, EffectReceipt: creditEff},
			specs: func(t *testing.T) map[string]readback.Spec {
				return map[string]readback.Spec{"issue_credit": creditReadback(creditServer(t, issued), `""`)}
			},
			code: codes.Unavailable, msg: "readback source unreadable: nothing was verified", reason: errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE},
		{name: "kernel unreachable: receipt withheld", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv},
			kernel: &kernel{err: status.Error(codes.Unavailable, "connection refused")},
			code:   codes.Unavailable, msg: "kernel unreachable: the readback was not recorded", reason: errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE},
		{name: "kernel refusal passes through", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv},
			kernel: &kernel{err: serve.Error(codes.FailedPrecondition, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_USED, "capability cap-1 is verified")},
			code:   codes.FailedPrecondition, msg: "capability cap-1 is verified", reason: errorv1.ErrorReason_ERROR_REASON_CAPABILITY_USED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.kernel
			if k == nil {
				k = &kernel{}
			}
			specs := map[string]readback.Spec{"refund": refundReadback(refunds(t))}
			if tt.specs != nil {
				specs = tt.specs(t)
			}
			h := newHandler(t, s, k, specs)
			if tt.after != nil {
				tt.after(t, specs)
			}
			resp, err := h.Verify(context.Background(), tt.req)
			if resp != nil {
				t.Errorf("Verify returned %v", resp)
			}
			st := status.Convert(err)
			if st.Code() != tt.code || st.Message() != tt.msg {
				t.Errorf("Verify = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.msg)
			}
			if got := serve.Reason(err); got != tt.reason {
				t.Errorf("ErrorInfo reason = %v, want %v", got, tt.reason)
			}
			if len(k.recorded) != 0 {
				t.Error("a refused verification was recorded")
			}
		})
	}
	t.Run("arguments in another order are the same call", func(t *testing.T) {
		k := &kernel{}
		h := newHandler(t, s, k, map[string]readback.Spec{"refund": refundReadback(refunds(t))})
		resp, err := h.Verify(context.Background(), &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: reordered})
		if err != nil || resp.GetReceipt().GetStatus() != verified {
			t.Errorf("Verify = %v, %v; want VERIFIED", resp.GetReceipt(), err)
		}
	})
}

func TestNewCoreRefusesOneKeyForBoth(t *testing.T) {
	s := newSigners(t)
	_, err := verify.NewCore(verify.Deps{
		Issuer: service.Issuer{Identity: "verifier", Signer: s.verifier, Log: zap.NewNop()},
		Keys:   envelope.Keyring{"kernel": s.kernelPub}, KernelKeyID: "kernel", ActionKeyID: "kernel",
		Kernel: &kernel{}, KernelTimeout: time.Second, ReadTimeout: time.Second,
	})
	for _, w := range []string{"same", "no readbacks"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("NewCore = %v, want an error naming %q", err, w)
		}
	}
}

// TestVerifyConcurrently races verifications of both connectors through one
// core: each is verified and recorded once.
func TestVerifyConcurrently(t *testing.T) {
	s := newSigners(t)
	k := &kernel{}
	h := newHandler(t, s, k, map[string]readback.Spec{
		"refund":       refundReadback(writePayments(t, paid)),
		"issue_credit": creditReadback(creditServer(t, issued), "effect.idempotency_key"),
	})
	refundCap, refundEff := s.envelopes(t, refundCall, "pay-1", nil)
	creditCap, creditEff := s.envelopes(t, creditCall, "cr-1", nil)
	const rounds = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for range rounds {
		for _, req := range []*verifierv1.VerifyRequest{
			{Capability: refundCap, EffectReceipt: refundEff},
			{Capability: creditCap, EffectReceipt: creditEff},
		} {
			wg.Go(func() {
				resp, err := h.Verify(context.Background(), req)
				if err == nil && resp.GetReceipt().GetStatus() != verified {
					err = fmt.Errorf("status %v, findings %v", resp.GetReceipt().GetStatus(), resp.GetReceipt().GetFindings())
				}
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if len(k.recorded) != 2*rounds {
		t.Errorf("%d receipts recorded, want %d", len(k.recorded), 2*rounds)
	}
}

func TestStatusesTable(t *testing.T) {
	if err := verify.Statuses().Validate(); err != nil {
		t.Error(err)
	}
}
