package action_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/action"
	"github.com/ambitkernel/ambit/adapters/payments"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
)

// kernel is an in-test implementation of action.Kernel: it counts calls
// and answers with the configured errors.
type kernel struct {
	mu        sync.Mutex
	redeemed  int
	recorded  []*receiptv1.Envelope
	redeemErr error
	recordErr error
}

var _ action.Kernel = (*kernel)(nil)

func (k *kernel) RedeemCapability(_ context.Context, in *kernelv1.RedeemCapabilityRequest, _ ...grpc.CallOption) (*kernelv1.RedeemCapabilityResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.redeemErr != nil {
		return nil, k.redeemErr
	}
	k.redeemed++
	return &kernelv1.RedeemCapabilityResponse{First: k.redeemed == 1}, nil
}

func (k *kernel) RecordEffect(_ context.Context, in *kernelv1.RecordEffectRequest, _ ...grpc.CallOption) (*kernelv1.RecordEffectResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.recordErr != nil {
		return nil, k.recordErr
	}
	k.recorded = append(k.recorded, in.GetReceipt())
	return &kernelv1.RecordEffectResponse{}, nil
}

func (k *kernel) set(redeemErr, recordErr error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.redeemErr, k.recordErr = redeemErr, recordErr
}

func (k *kernel) counts() (redeemed, recorded int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.redeemed, len(k.recorded)
}

var (
	now     = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	expires = now.Add(5 * time.Minute)
)

func refund(minor int64) *contractv1.Action {
	return &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{
		ClaimId: "C-1001", PayeeId: "employee-7", ReasonCode: "approved-expense",
		Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: minor},
	}}}
}

type keys struct {
	kernelPub  ed25519.PublicKey
	kernelPriv ed25519.PrivateKey
	actionPub  ed25519.PublicKey
	actionPriv ed25519.PrivateKey
}

func newKeys(t *testing.T) keys {
	t.Helper()
	var k keys
	var err error
	if k.kernelPub, k.kernelPriv, err = ed25519.GenerateKey(nil); err != nil {
		t.Fatal(err)
	}
	if k.actionPub, k.actionPriv, err = ed25519.GenerateKey(nil); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k keys) capability(t *testing.T, key string, a *contractv1.Action) *receiptv1.Envelope {
	t.Helper()
	env, err := envelope.NewSigner("kernel", k.kernelPriv).Sign(&receiptv1.Capability{
		CapabilityId: "cap-" + key, DecisionId: "dec-1", TaskId: "refund-claim-1001", ContractHash: "h",
		Action: a, Destination: "claimant", StateVersion: "claims-v42", IdempotencyKey: key,
		IssuedAt: timestamppb.New(now.Add(-time.Minute)), ExpiresAt: timestamppb.New(expires), Holder: "agent",
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

type fixture struct {
	keys   keys
	kernel *kernel
	ledger *payments.Ledger
	path   string
	core   *action.Core
	h      *action.Handler
	clock  *clock
	logs   *observer.ObservedLogs
	hooks  int
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newFixture builds a core on a fresh payments ledger at path (empty: a
// temporary file); opts adjust its dependencies last.
func newFixture(t *testing.T, k *kernel, path string, afterCommit func(*fixture), opts ...func(*action.Deps)) *fixture {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "payments.db")
	}
	ledger, err := payments.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ledger.Close() })
	f := &fixture{keys: newKeys(t), kernel: k, ledger: ledger, path: path, clock: &clock{t: now}}
	obs, logs := observer.New(zap.DebugLevel)
	f.logs = logs
	var ids int
	var idMu sync.Mutex
	d := action.Deps{
		Issuer: service.Issuer{
			Identity: "action",
			Signer:   envelope.NewSigner("action", f.keys.actionPriv),
			Now:      f.clock.now,
			NewID: func() string {
				idMu.Lock()
				defer idMu.Unlock()
				ids++
				return fmt.Sprintf("%04d", ids)
			},
			Log: zap.New(obs),
		},
		KernelKeys:    envelope.Keyring{"kernel": f.keys.kernelPub},
		KernelKeyID:   "kernel",
		Kernel:        k,
		KernelTimeout: time.Second,
		Ledger:        ledger,
	}
	if afterCommit != nil {
		d.AfterCommit = func() { afterCommit(f) }
	}
	for _, opt := range opts {
		opt(&d)
	}
	if f.core, err = action.NewCore(d); err != nil {
		t.Fatal(err)
	}
	f.h = action.NewHandler(f.core)
	return f
}

func (f *fixture) payment(t *testing.T, key string) (payments.Payment, bool) {
	t.Helper()
	p, err := f.ledger.ByKey(context.Background(), key)
	if errors.Is(err, payments.ErrNotFound) {
		return payments.Payment{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return p, true
}

func request(capability *receiptv1.Envelope, key string, a *contractv1.Action) *actionv1.ExecuteRequest {
	return &actionv1.ExecuteRequest{Capability: capability, Action: a, IdempotencyKey: key}
}

func TestExecuteFirstThenRetry(t *testing.T) {
	k := &kernel{}
	f := newFixture(t, k, "", nil)
	ctx := agentCtx()
	req := request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
	first, err := f.h.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := &receiptv1.EffectReceipt{
		ReceiptId: "eff-0002", CapabilityId: "cap-idem-1", TaskId: "refund-claim-1001", IdempotencyKey: "idem-1",
		Action: refund(1740), Destination: "claimant", RecordRef: "pay-0001",
		ExecutedAt: timestamppb.New(now), Issuer: "action",
	}
	if diff := cmp.Diff(want, first.GetReceipt(), protocmp.Transform()); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	if first.GetRepeated() {
		t.Error("first execution says repeated")
	}
	var opened receiptv1.EffectReceipt
	if err := (envelope.Keyring{"action": f.keys.actionPub}).Open(first.GetSignedReceipt(), "action", &opened); err != nil {
		t.Fatalf("signed receipt does not verify: %v", err)
	}
	if diff := cmp.Diff(want, &opened, protocmp.Transform()); diff != "" {
		t.Errorf("signed payload (-want +got):\n%s", diff)
	}
	p, ok := f.payment(t, "idem-1")
	if !ok {
		t.Fatal("no payment")
	}
	wantPayment := payments.Payment{
		PaymentID: "pay-0001", IdempotencyKey: "idem-1", CapabilityID: "cap-idem-1", TaskID: "refund-claim-1001",
		ClaimID: "C-1001", PayeeID: "employee-7", Destination: "claimant", Currency: "GBP", AmountMinor: 1740,
		ExecutedAt: now, Action: refund(1740), Receipt: first.GetSignedReceipt(), Recorded: true,
	}
	if diff := cmp.Diff(wantPayment, p, protocmp.Transform()); diff != "" {
		t.Errorf("payment (-want +got):\n%s", diff)
	}

	// A retry, even after expiry, returns the first receipt and pays nothing.
	f.clock.set(expires.Add(time.Hour))
	again, err := f.h.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.GetRepeated() {
		t.Error("retry not marked repeated")
	}
	if !proto.Equal(again.GetSignedReceipt(), first.GetSignedReceipt()) || !proto.Equal(again.GetReceipt(), first.GetReceipt()) {
		t.Error("retry returned a different receipt")
	}
	redeemed, recorded := k.counts()
	if redeemed != 2 || recorded != 2 {
		t.Errorf("kernel saw %d redemptions and %d records, want 2 and 2 (retries are redeemed and recorded again)", redeemed, recorded)
	}
	effects := f.logs.FilterMessage("effect").All()
	if len(effects) != 2 {
		t.Fatalf("%d effect log lines, want 2", len(effects))
	}
	wantLog := map[string]any{"caller": "agent", "idempotency_key": "idem-1", "capability_id": "cap-idem-1", "task_id": "refund-claim-1001",
		"payment_id": "pay-0001", "receipt_id": "eff-0002", "amount_minor": int64(1740), "currency": "GBP", "repeated": true, "first_redemption": false}
	if diff := cmp.Diff(wantLog, effects[1].ContextMap()); diff != "" {
		t.Errorf("retry log line (-want +got):\n%s", diff)
	}
}

func TestExecuteRefusals(t *testing.T) {
	otherKernel := newKeys(t)
	tests := []struct {
		name string
		// setup returns the request; it may pay an earlier effect first.
		setup  func(t *testing.T, f *fixture) *actionv1.ExecuteRequest
		kernel *kernel
		code   codes.Code
		msg    string
		paid   bool
	}{
		{
			name: "capability signed by another key",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(otherKernel.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
			},
			code: codes.PermissionDenied, msg: "capability does not verify",
		},
		{
			name: "capability tampered with",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				env := f.keys.capability(t, "idem-1", refund(1740))
				var c receiptv1.Capability
				_ = proto.Unmarshal(env.GetPayload(), &c)
				c.Action = refund(174000)
				env.Payload, _ = proto.Marshal(&c)
				return request(env, "idem-1", refund(174000))
			},
			code: codes.PermissionDenied, msg: "capability does not verify",
		},
		{
			name: "capability under another key id",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				env := f.keys.capability(t, "idem-1", refund(1740))
				env.KeyId = "agent"
				return request(env, "idem-1", refund(1740))
			},
			code: codes.PermissionDenied, msg: "capability does not verify",
		},
		{
			name: "an evidence receipt is not a capability",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				env, _ := envelope.NewSigner("kernel", f.keys.kernelPriv).Sign(&receiptv1.EvidenceReceipt{ReceiptId: "ev-1"})
				return request(env, "idem-1", refund(1740))
			},
			code: codes.PermissionDenied, msg: "capability does not verify",
		},
		{
			name: "idempotency key not the capability's",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", refund(1740)), "idem-2", refund(1740))
			},
			code: codes.InvalidArgument, msg: "idempotency key differs from the capability's",
		},
		{
			name: "effect differs from the capability",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1741))
			},
			code: codes.PermissionDenied, msg: "requested effect differs from the capability",
		},
		{
			name: "key already paid a different effect",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				if _, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))); err != nil {
					t.Fatal(err)
				}
				// A second capability reusing the key for another amount.
				return request(f.keys.capability(t, "idem-1", refund(9999)), "idem-1", refund(9999))
			},
			code: codes.InvalidArgument, msg: "idempotency key already used for a different effect", paid: true,
		},
		{
			name: "expired",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				f.clock.set(expires.Add(time.Nanosecond))
				return request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
			},
			code: codes.FailedPrecondition, msg: "capability expired",
		},
		{
			name:   "kernel unreachable: nothing executed",
			kernel: &kernel{redeemErr: status.Error(codes.Unavailable, "connection refused")},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
			},
			code: codes.Unavailable, msg: "kernel unreachable: nothing was executed",
		},
		{
			name:   "kernel too slow: nothing executed",
			kernel: &kernel{redeemErr: status.Error(codes.DeadlineExceeded, "context deadline exceeded")},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
			},
			code: codes.Unavailable, msg: "kernel unreachable: nothing was executed",
		},
		{
			name: "kernel unreachable on a retry fails closed too",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				req := request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
				if _, err := f.h.Execute(agentCtx(), req); err != nil {
					t.Fatal(err)
				}
				f.kernel.set(status.Error(codes.Unavailable, "down"), nil)
				return req
			},
			code: codes.Unavailable, msg: "kernel unreachable: nothing was executed", paid: true,
		},
		{
			name:   "capability already used passes through",
			kernel: &kernel{redeemErr: status.Error(codes.FailedPrecondition, "capability already used")},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
			},
			code: codes.FailedPrecondition, msg: "capability already used",
		},
		{
			name:   "revoked capability passes through",
			kernel: &kernel{redeemErr: status.Error(codes.PermissionDenied, "capability revoked: claims-v42 changed to claims-v43")},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
			},
			code: codes.PermissionDenied, msg: "capability revoked: claims-v42 changed to claims-v43",
		},
		{
			name: "other action types have no executor",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				a := &contractv1.Action{Kind: &contractv1.Action_EmailAttachment{EmailAttachment: &contractv1.EmailAttachment{Recipient: "payouts@evil.example"}}}
				return request(f.keys.capability(t, "idem-1", a), "idem-1", a)
			},
			code: codes.Unimplemented, msg: "no executor for action type email_attachment",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.kernel
			if k == nil {
				k = &kernel{}
			}
			f := newFixture(t, k, "", nil)
			req := tt.setup(t, f)
			redeemedBefore, recordedBefore := k.counts()
			resp, err := f.h.Execute(agentCtx(), req)
			if resp != nil {
				t.Errorf("Execute returned %v", resp)
			}
			st := status.Convert(err)
			if st.Code() != tt.code || st.Message() != tt.msg {
				t.Errorf("Execute = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.msg)
			}
			redeemed, recorded := k.counts()
			if redeemed-redeemedBefore != 0 || recorded != recordedBefore {
				t.Errorf("refused call redeemed %d and recorded %d, want nothing", redeemed-redeemedBefore, recorded-recordedBefore)
			}
			if _, paid := f.payment(t, "idem-1"); paid != tt.paid {
				t.Errorf("payment exists = %v, want %v", paid, tt.paid)
			}
		})
	}
}

// TestNoReceiptUnlessRecorded: the payment commits but the kernel cannot log
// it, so no receipt is returned; a retry (or the sweep) completes it with
// the first receipt, and nothing is paid twice.
func TestNoReceiptUnlessRecorded(t *testing.T) {
	k := &kernel{recordErr: status.Error(codes.Unavailable, "down")}
	f := newFixture(t, k, "", nil)
	ctx := agentCtx()
	req := request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
	resp, err := f.h.Execute(ctx, req)
	if resp != nil {
		t.Fatalf("Execute returned a receipt the kernel has not logged: %v", resp)
	}
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || st.Message() != "effect committed but not yet recorded; retry with the same idempotency key" {
		t.Fatalf("Execute = %v %q", st.Code(), st.Message())
	}
	p, ok := f.payment(t, "idem-1")
	if !ok || p.Recorded {
		t.Fatalf("payment = %+v (exists %v), want committed and unrecorded", p, ok)
	}

	k.set(nil, nil)
	again, err := f.h.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.GetRepeated() || !proto.Equal(again.GetSignedReceipt(), p.Receipt) {
		t.Error("retry did not return the first receipt as repeated")
	}
	if p, _ := f.payment(t, "idem-1"); !p.Recorded {
		t.Error("payment not marked recorded after the retry")
	}
}

func TestSweepRecordsWhatTheAgentNeverRetried(t *testing.T) {
	// The ledger's pool goroutine ends in t.Cleanup; the sweep's must end
	// when its context does.
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
	k := &kernel{recordErr: status.Error(codes.Unavailable, "down")}
	f := newFixture(t, k, "", nil)
	ctx := agentCtx()
	for _, key := range []string{"idem-1", "idem-2"} {
		if _, err := f.h.Execute(ctx, request(f.keys.capability(t, key, refund(1740)), key, refund(1740))); status.Code(err) != codes.Unavailable {
			t.Fatalf("Execute(%s) = %v, want Unavailable", key, err)
		}
	}
	if n := f.core.Sweep(ctx); n != 0 {
		t.Errorf("Sweep with the kernel down recorded %d", n)
	}
	k.set(nil, nil)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.core.RunSweep(runCtx, 10*time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, recorded := k.counts()
		if recorded == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweep recorded %d of 2", recorded)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunSweep = %v", err)
	}
	for _, key := range []string{"idem-1", "idem-2"} {
		if p, _ := f.payment(t, key); !p.Recorded {
			t.Errorf("%s not marked recorded", key)
		}
	}
	if n := f.core.Sweep(ctx); n != 0 {
		t.Errorf("second Sweep re-sent %d", n)
	}
}

func TestAfterCommitRunsBetweenCommitAndRecord(t *testing.T) {
	k := &kernel{}
	var sawPayment bool
	var recordedAtHook = -1
	f := newFixture(t, k, "", func(f *fixture) {
		f.hooks++
		_, recordedAtHook = k.counts()
		_, sawPayment = f.payment(t, "idem-1")
	})
	req := request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
	for range 2 {
		if _, err := f.h.Execute(agentCtx(), req); err != nil {
			t.Fatal(err)
		}
	}
	if f.hooks != 1 {
		t.Errorf("hook ran %d times, want once (only a commit runs it)", f.hooks)
	}
	if !sawPayment || recordedAtHook != 0 {
		t.Errorf("at the hook: payment committed %v, records %d; want true, 0", sawPayment, recordedAtHook)
	}
}

func TestConcurrentRetriesPayOnce(t *testing.T) {
	k := &kernel{}
	f := newFixture(t, k, "", nil)
	req := request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
	const n = 12
	resps := make([]*actionv1.ExecuteResponse, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { resps[i], errs[i] = f.h.Execute(agentCtx(), req) })
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Execute %d: %v", i, errs[i])
		}
		if !resps[i].GetRepeated() {
			fresh++
		}
		if !proto.Equal(resps[i].GetSignedReceipt(), resps[0].GetSignedReceipt()) {
			t.Errorf("Execute %d returned another receipt", i)
		}
	}
	if fresh != 1 {
		t.Errorf("%d answers not repeated, want exactly 1", fresh)
	}
}

func TestAfterCommitHook(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == action.FailpointEnv {
				return v
			}
			return ""
		}
	}
	if action.AfterCommitHook(env("")) != nil || action.AfterCommitHook(env("action.before-commit")) != nil {
		t.Error("hook armed without the failpoint")
	}
	if action.AfterCommitHook(env("action.after-commit")) == nil {
		t.Error("hook not armed by AMBIT_FAILPOINT=action.after-commit")
	}
}

// TestFailpointKillsAfterCommit runs an execution in a child process with
// AMBIT_FAILPOINT=action.after-commit: the child dies by SIGKILL with the
// payment committed and unrecorded, and a retry here returns that payment's
// receipt without paying again.
func TestFailpointKillsAfterCommit(t *testing.T) {
	if os.Getenv("AMBIT_TEST_FAILPOINT_CHILD") != "" {
		failpointChild(t)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailpointKillsAfterCommit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AMBIT_TEST_FAILPOINT_CHILD="+dir, action.FailpointEnv+"="+action.FailpointAfterCommit)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child ended with %v, want a kill; output:\n%s", err, out)
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL; output:\n%s", err, out)
	}
	k := &kernel{}
	f := newFixture(t, k, filepath.Join(dir, "payments.db"), nil)
	p, ok := f.payment(t, "idem-crash")
	if !ok || p.Recorded {
		t.Fatalf("after the kill: payment %+v exists=%v, want committed and unrecorded", p, ok)
	}
	// The child's kernel key is gone with it; re-sign the same capability
	// under this fixture's key to retry.
	resp, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-crash", refund(1740)), "idem-crash", refund(1740)))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetRepeated() || !proto.Equal(resp.GetSignedReceipt(), p.Receipt) {
		t.Error("retry after the crash did not return the committed payment's receipt")
	}
}

func failpointChild(t *testing.T) {
	dir := os.Getenv("AMBIT_TEST_FAILPOINT_CHILD")
	k := &kernel{}
	f := newFixture(t, k, filepath.Join(dir, "payments.db"), nil)
	ledger, err := payments.Open(context.Background(), filepath.Join(dir, "payments.db"))
	if err != nil {
		t.Fatal(err)
	}
	core, err := action.NewCore(action.Deps{
		Issuer: service.Issuer{
			Identity: "action", Signer: envelope.NewSigner("action", f.keys.actionPriv),
			Now: func() time.Time { return now }, Log: zap.NewNop(),
		},
		KernelKeys: envelope.Keyring{"kernel": f.keys.kernelPub}, KernelKeyID: "kernel",
		Kernel: k, KernelTimeout: time.Second, Ledger: ledger, AfterCommit: action.AfterCommitHook(os.Getenv),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = core.Execute(context.Background(), "agent", request(f.keys.capability(t, "idem-crash", refund(1740)), "idem-crash", refund(1740)))
	t.Fatalf("the failpoint did not kill the process (Execute = %v)", err)
}

// agentCtx is a request context whose caller is the agent, as the serving
// interceptor leaves it.
func agentCtx() context.Context {
	return serve.WithCaller(context.Background(), pki.Identity{Name: "agent", Role: pki.RoleAgent})
}

// TestOnlyTheHolderMayPresent refuses a capability presented by another
// agent than the one the kernel issued it to: nothing is redeemed or paid.
func TestOnlyTheHolderMayPresent(t *testing.T) {
	k := &kernel{}
	f := newFixture(t, k, "", nil)
	other := serve.WithCaller(context.Background(), pki.Identity{Name: "agent-b", Role: pki.RoleAgent})
	_, err := f.h.Execute(other, request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740)))
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "another agent") {
		t.Fatalf("Execute by another agent = %v, want PermissionDenied", err)
	}
	if _, found := f.payment(t, "idem-1"); found || k.redeemed != 0 {
		t.Errorf("paid %v, redeemed %d times", found, k.redeemed)
	}
}
