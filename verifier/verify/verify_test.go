package verify_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
	_ "modernc.org/sqlite"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/verifier/payments"
	"github.com/ambitkernel/ambit/verifier/verify"
)

// kernel is an in-test implementation of verify.Kernel.
type kernel struct {
	mu       sync.Mutex
	recorded []*receiptv1.Envelope
	err      error
}

var _ verify.Kernel = (*kernel)(nil)

func (k *kernel) RecordReadback(_ context.Context, in *kernelv1.RecordReadbackRequest, _ ...grpc.CallOption) (*kernelv1.RecordReadbackResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return nil, k.err
	}
	k.recorded = append(k.recorded, in.GetReceipt())
	return &kernelv1.RecordReadbackResponse{}, nil
}

var readAt = time.Date(2026, 3, 2, 10, 5, 0, 0, time.UTC)

type signers struct {
	kernel, action, verifier       *envelope.Signer
	kernelPub, actionPub, verifPub ed25519.PublicKey
}

func newSigners(t *testing.T) signers {
	t.Helper()
	var s signers
	gen := func(name string) (*envelope.Signer, ed25519.PublicKey) {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		return envelope.NewSigner(name, priv), pub
	}
	s.kernel, s.kernelPub = gen("kernel")
	s.action, s.actionPub = gen("action")
	s.verifier, s.verifPub = gen("verifier")
	return s
}

func refund(minor int64) *contractv1.Action {
	return &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{
		ClaimId: "C-1001", PayeeId: "employee-7", ReasonCode: "approved-expense",
		Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: minor},
	}}}
}

func (s signers) envelopes(t *testing.T, effectMut func(*receiptv1.EffectReceipt)) (capEnv, effEnv *receiptv1.Envelope) {
	t.Helper()
	capEnv, err := s.kernel.Sign(&receiptv1.Capability{
		CapabilityId: "cap-1", TaskId: "refund-claim-1001", Action: refund(1740), Destination: "claimant",
		IdempotencyKey: "idem-1", ExpiresAt: timestamppb.New(readAt.Add(time.Hour)),
	})
	if err != nil {
		t.Fatal(err)
	}
	eff := &receiptv1.EffectReceipt{
		ReceiptId: "eff-1", CapabilityId: "cap-1", TaskId: "refund-claim-1001", IdempotencyKey: "idem-1",
		Action: refund(1740), Destination: "claimant", RecordRef: "pay-1", Issuer: "action",
	}
	if effectMut != nil {
		effectMut(eff)
	}
	effEnv, err = s.action.Sign(eff)
	if err != nil {
		t.Fatal(err)
	}
	return capEnv, effEnv
}

type payment struct {
	id, key, claim, payee string
	minor                 int64
}

// writeLedger creates a payments ledger with the action adapter's schema
// (written here independently) and rows.
func writeLedger(t *testing.T, rows ...payment) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payments.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE payments (
		payment_id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, capability_id TEXT NOT NULL,
		task_id TEXT NOT NULL, claim_id TEXT NOT NULL, payee_id TEXT NOT NULL, destination TEXT NOT NULL,
		currency TEXT NOT NULL, amount_minor INTEGER NOT NULL, executed_at TEXT NOT NULL,
		action BLOB NOT NULL, receipt BLOB NOT NULL, recorded INTEGER NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	for _, p := range rows {
		if _, err := db.Exec(`INSERT INTO payments VALUES (?, ?, 'cap-1', 'refund-claim-1001', ?, ?, 'claimant', 'GBP', ?,
			'2026-03-02T10:00:00Z', x'', x'', 1)`, p.id, p.key, p.claim, p.payee, p.minor); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func newCore(t *testing.T, s signers, k *kernel, ledgerPath string) *verify.Handler {
	t.Helper()
	r, err := payments.Open(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	core, err := verify.NewCore(verify.Deps{
		Issuer: service.Issuer{
			Identity: "verifier", Signer: s.verifier, Log: zap.NewNop(),
			Now: func() time.Time { return readAt }, NewID: func() string { return "0001" },
		},
		Keys:        envelope.Keyring{"kernel": s.kernelPub, "action": s.actionPub},
		KernelKeyID: "kernel", ActionKeyID: "action",
		Kernel: k, KernelTimeout: time.Second, Ledger: r,
	})
	if err != nil {
		t.Fatal(err)
	}
	return verify.NewHandler(core)
}

func TestVerify(t *testing.T) {
	ok := payment{"pay-1", "idem-1", "C-1001", "employee-7", 1740}
	tests := []struct {
		name     string
		rows     []payment
		effect   func(*receiptv1.EffectReceipt)
		status   receiptv1.ReadbackStatus
		findings []string
		found    int32
	}{
		{name: "verified", rows: []payment{ok}, status: receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED, found: 1},
		{
			name: "altered amount", rows: []payment{{"pay-1", "idem-1", "C-1001", "employee-7", 1741}},
			status: receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH, found: 1,
			findings: []string{"amount GBP 17.41 differs from the bound GBP 17.40"},
		},
		{
			name: "doubled", rows: []payment{ok, {"pay-2", "idem-2", "C-1001", "employee-7", 1740}},
			status: receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH, found: 1,
			findings: []string{"2 payments found for claim C-1001"},
		},
		{
			name: "missing", status: receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH,
			findings: []string{"no payment found for idempotency key idem-1", "no payment found for claim C-1001"},
		},
		{
			name: "effect receipt disagrees with the capability", rows: []payment{ok},
			effect: func(e *receiptv1.EffectReceipt) { e.Action = refund(9999) },
			status: receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH, found: 1,
			findings: []string{"effect receipt action differs from the capability's"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSigners(t)
			k := &kernel{}
			h := newCore(t, s, k, writeLedger(t, tt.rows...))
			capEnv, effEnv := s.envelopes(t, tt.effect)
			resp, err := h.Verify(context.Background(), &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv})
			if err != nil {
				t.Fatal(err)
			}
			want := &receiptv1.ReadbackReceipt{
				ReceiptId: "rb-0001", CapabilityId: "cap-1", EffectReceiptId: "eff-1", TaskId: "refund-claim-1001",
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
	ok := payment{"pay-1", "idem-1", "C-1001", "employee-7", 1740}
	capEnv, effEnv := s.envelopes(t, nil)
	forgedCap, forgedEff := other.envelopes(t, nil)
	// An effect receipt signed with the kernel's key is still not the
	// action adapter's.
	kernelSignedEff, err := s.kernel.Sign(&receiptv1.EffectReceipt{ReceiptId: "eff-1"})
	if err != nil {
		t.Fatal(err)
	}
	kernelSignedEff.KeyId = "action"
	tests := []struct {
		name     string
		req      *verifierv1.VerifyRequest
		kernel   *kernel
		ledger   string
		code     codes.Code
		msg      string
		recorded bool
	}{
		{name: "no envelopes", req: &verifierv1.VerifyRequest{}, code: codes.InvalidArgument,
			msg: "invalid request: capability is required; effect_receipt is required"},
		{name: "forged capability", req: &verifierv1.VerifyRequest{Capability: forgedCap, EffectReceipt: effEnv},
			code: codes.PermissionDenied, msg: "capability does not verify"},
		{name: "forged effect receipt", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: forgedEff},
			code: codes.PermissionDenied, msg: "effect receipt does not verify"},
		{name: "effect receipt under the wrong key", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: kernelSignedEff},
			code: codes.PermissionDenied, msg: "effect receipt does not verify"},
		{name: "capability and receipt swapped", req: &verifierv1.VerifyRequest{Capability: effEnv, EffectReceipt: capEnv},
			code: codes.PermissionDenied, msg: "capability does not verify"},
		{name: "ledger unreadable", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv},
			ledger: filepath.Join(t.TempDir(), "missing.db"),
			code:   codes.Unavailable, msg: "payments ledger unreadable: nothing was verified"},
		{name: "kernel unreachable: receipt withheld", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv},
			kernel: &kernel{err: status.Error(codes.Unavailable, "connection refused")},
			code:   codes.Unavailable, msg: "kernel unreachable: the readback was not recorded"},
		{name: "kernel refusal passes through", req: &verifierv1.VerifyRequest{Capability: capEnv, EffectReceipt: effEnv},
			kernel: &kernel{err: status.Error(codes.FailedPrecondition, "commitment already closed")},
			code:   codes.FailedPrecondition, msg: "commitment already closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.kernel
			if k == nil {
				k = &kernel{}
			}
			ledger := tt.ledger
			if ledger == "" {
				ledger = writeLedger(t, ok)
			}
			resp, err := newCore(t, s, k, ledger).Verify(context.Background(), tt.req)
			if resp != nil {
				t.Errorf("Verify returned %v", resp)
			}
			st := status.Convert(err)
			if st.Code() != tt.code || st.Message() != tt.msg {
				t.Errorf("Verify = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.msg)
			}
			if len(k.recorded) != 0 {
				t.Error("a refused verification was recorded")
			}
		})
	}
}

func TestNewCoreRefusesOneKeyForBoth(t *testing.T) {
	s := newSigners(t)
	_, err := verify.NewCore(verify.Deps{
		Issuer: service.Issuer{Identity: "verifier", Signer: s.verifier, Log: zap.NewNop()},
		Keys:   envelope.Keyring{"kernel": s.kernelPub}, KernelKeyID: "kernel", ActionKeyID: "kernel",
		Kernel: &kernel{}, KernelTimeout: time.Second, Ledger: nil,
	})
	if err == nil || !strings.Contains(err.Error(), "same") {
		t.Errorf("NewCore with one key for both = %v", err)
	}
}
