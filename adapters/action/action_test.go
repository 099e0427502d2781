package action_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/action"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// effectCheck asserts what a target holds after n executions of one
// transfer call under one key: always exactly one effect.
type effectCheck func(t *testing.T, tg targets, hook *hookTarget, m *mcpTarget)

func oneTransfer(path func(targets) string) effectCheck {
	return func(t *testing.T, tg targets, _ *hookTarget, _ *mcpTarget) {
		t.Helper()
		want := []transfer{{ID: "eff-0001", Key: "idem-1", Account: "acct-7", Currency: "GBP", Destination: "own_account", Minor: 1740}}
		if diff := cmp.Diff(want, transfers(t, path(tg))); diff != "" {
			t.Errorf("transfers (-want +got):\n%s", diff)
		}
	}
}

func oneRequest(body string) effectCheck {
	return func(t *testing.T, _ targets, hook *hookTarget, _ *mcpTarget) {
		t.Helper()
		requests, effects := hook.seen()
		want := []hookRequest{{Key: "idem-1", ContentType: "application/json", Body: body}}
		if diff := cmp.Diff(want, requests); diff != "" || effects != 1 {
			t.Errorf("hook saw %d effects; requests (-want +got):\n%s", effects, diff)
		}
	}
}

func oneCall(tool string) effectCheck {
	return func(t *testing.T, _ targets, _ *hookTarget, m *mcpTarget) {
		t.Helper()
		calls, credits, messages := m.seen()
		if diff := cmp.Diff([]string{tool}, calls); diff != "" || credits+messages != 1 {
			t.Errorf("mcp target: %d credits, %d messages; calls (-want +got):\n%s", credits, messages, diff)
		}
	}
}

// TestExecuteFirstThenRetry executes one call through each kind of
// executor, then retries it after the capability has expired: the retry
// returns the first receipt and the target holds one effect.
func TestExecuteFirstThenRetry(t *testing.T) {
	for _, tc := range []struct {
		tool      string
		recordRef string
		check     effectCheck
	}{
		{tool: "transfer", recordRef: "eff-0001", check: oneTransfer(targets.targetDB)},
		{tool: "transfer_here", recordRef: "eff-0001", check: oneTransfer(targets.actionDB)},
		{tool: "notify", recordRef: "n-1", check: oneRequest(`{"amount":{"currency_code":"GBP","minor_units":1740},"key":"idem-1","task":"task-1","to":"acct-7"}`)},
		{tool: "notify_raw", recordRef: "eff-0001", check: oneRequest(transferArgs)},
		{tool: "issue_credit", recordRef: "cr-1", check: oneCall("issue_credit")},
		{tool: "send_message", recordRef: "m-1", check: oneCall("send_message")},
	} {
		for _, db := range databases {
			t.Run(db.name+"/"+tc.tool, func(t *testing.T) {
				tg, hook, m := db.targets(t)
				k := &kernel{}
				f := newFixture(t, k, tg, options{})
				req := request(f.keys.capability(t, "idem-1", toolCall(tc.tool, transferArgs)), "idem-1")
				first, err := f.h.Execute(agentCtx(), req)
				if err != nil {
					t.Fatal(err)
				}
				want := &receiptv1.EffectReceipt{
					ReceiptId: "eff-0001", CapabilityId: "cap-idem-1", TaskId: "task-1", IdempotencyKey: "idem-1",
					Call: toolCall(tc.tool, transferArgs), Destination: "own_account", RecordRef: tc.recordRef,
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
				if e, _ := f.entry(t, "idem-1"); e.State != action.Done || !e.Recorded || !proto.Equal(e.Receipt, first.GetSignedReceipt()) {
					t.Errorf("key row = %+v, want Done and recorded with the receipt", e)
				}

				// A retry, even after expiry, returns the first receipt and
				// repeats nothing.
				f.clock.set(expires.Add(time.Hour))
				again, err := f.h.Execute(agentCtx(), req)
				if err != nil {
					t.Fatal(err)
				}
				if !again.GetRepeated() || !proto.Equal(again.GetSignedReceipt(), first.GetSignedReceipt()) || !proto.Equal(again.GetReceipt(), first.GetReceipt()) {
					t.Error("retry did not return the first receipt as repeated")
				}
				tc.check(t, tg, hook, m)
				redeemed, recorded := k.counts()
				if redeemed != 2 || recorded != 2 {
					t.Errorf("kernel saw %d redemptions and %d records, want 2 and 2 (retries are redeemed and recorded again)", redeemed, recorded)
				}
				for _, r := range k.redeems {
					if r.GetHolder() != "agent" || r.GetIdempotencyKey() != "idem-1" || !proto.Equal(r.GetCapability(), req.GetCapability()) {
						t.Errorf("redemption %v, want the capability, its key and the holder", r)
					}
				}
				effects := f.logs.FilterMessage("effect").All()
				if len(effects) != 2 {
					t.Fatalf("%d effect log lines, want 2", len(effects))
				}
				wantLog := map[string]any{"caller": "agent", "idempotency_key": "idem-1", "capability_id": "cap-idem-1", "task_id": "task-1",
					"tool": tc.tool, "executor": executorKind(tc.tool), "receipt_id": "eff-0001", "record_ref": tc.recordRef,
					"repeated": true, "first_redemption": false}
				if diff := cmp.Diff(wantLog, effects[1].ContextMap()); diff != "" {
					t.Errorf("retry log line (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func executorKind(tool string) string {
	switch tool {
	case "transfer", "transfer_here":
		return "sql"
	case "notify", "notify_raw":
		return "http"
	}
	return "mcp"
}

func TestExecuteRefusals(t *testing.T) {
	otherKernel := newKeys(t)
	usedErr := serve.Error(codes.FailedPrecondition, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_USED, "capability cap-idem-1 is VERIFIED: its effect eff-1 is verified")
	revokedErr := serve.Error(codes.FailedPrecondition, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_REVOKED, "capability cap-idem-1 is REVOKED: accounts-v42 changed to accounts-v43")
	transferCall := toolCall("transfer", transferArgs)
	reason := func(r errorv1.ErrorReason) string { return r.String() }
	tests := []struct {
		name string
		// setup returns the request; it may execute an earlier effect.
		setup  func(t *testing.T, f *fixture) *actionv1.ExecuteRequest
		ctx    context.Context
		kernel *kernel
		want   refusal
		// rows is how many transfers the target holds afterwards.
		rows int
	}{
		{
			name: "invalid request",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(nil, "idem-1")
			},
			want: refusal{codes.InvalidArgument, "invalid request: capability is required", reason(errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST)},
		},
		{
			name: "capability signed by another key",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(otherKernel.capability(t, "idem-1", transferCall), "idem-1")
			},
			want: refusal{codes.PermissionDenied, "capability does not verify", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID)},
		},
		{
			name: "capability tampered with",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				env := f.keys.capability(t, "idem-1", transferCall)
				var c receiptv1.Capability
				_ = proto.Unmarshal(env.GetPayload(), &c)
				c.Call = toolCall("transfer", `{"account":"acct-9","amount":{"currency_code":"GBP","minor_units":174000}}`)
				env.Payload, _ = proto.Marshal(&c)
				return request(env, "idem-1")
			},
			want: refusal{codes.PermissionDenied, "capability does not verify", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID)},
		},
		{
			name: "capability under another key id",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				env := f.keys.capability(t, "idem-1", transferCall)
				env.KeyId = "agent"
				return request(env, "idem-1")
			},
			want: refusal{codes.PermissionDenied, "capability does not verify", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID)},
		},
		{
			name: "an evidence receipt is not a capability",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				env, _ := envelope.NewSigner("kernel", f.keys.kernelPriv).Sign(&receiptv1.EvidenceReceipt{ReceiptId: "ev-1"})
				return request(env, "idem-1")
			},
			want: refusal{codes.PermissionDenied, "capability does not verify", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID)},
		},
		{
			name: "capability binding a malformed call",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", toolCall("transfer", `{"account":"a","account":"b"}`)), "idem-1")
			},
			want: refusal{codes.PermissionDenied, "capability does not verify", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID)},
		},
		{
			name: "presented by another agent",
			ctx:  serve.WithCaller(context.Background(), pki.Identity{Name: "agent-b", Role: pki.RoleAgent}),
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", transferCall), "idem-1")
			},
			want: refusal{codes.PermissionDenied, "capability was issued to another agent", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_NOT_HOLDER)},
		},
		{
			name: "idempotency key not the capability's",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", transferCall), "idem-2")
			},
			want: refusal{codes.InvalidArgument, "idempotency key differs from the capability's", reason(errorv1.ErrorReason_ERROR_REASON_IDEMPOTENCY_KEY_MISMATCH)},
		},
		{
			name: "tool without an executor",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", toolCall("wire_funds", transferArgs)), "idem-1")
			},
			want: refusal{codes.Unimplemented, `no executor for tool "wire_funds"`, reason(errorv1.ErrorReason_ERROR_REASON_NO_EXECUTOR)},
		},
		{
			name: "call the mapping cannot read",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", toolCall("transfer", `{"amount":{"currency_code":"GBP","minor_units":1740}}`)), "idem-1")
			},
			want: refusal{codes.InvalidArgument, `the call does not fit the tool's executor: nothing was executed (columns.account: evaluate "args.account": no such key: account)`,
				reason(errorv1.ErrorReason_ERROR_REASON_ARGUMENTS_INVALID)},
		},
		{
			name: "key already used for another call",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				if _, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", transferCall), "idem-1")); err != nil {
					t.Fatal(err)
				}
				other := toolCall("transfer", `{"account":"acct-7","amount":{"currency_code":"GBP","minor_units":9999}}`)
				return request(f.keys.capability(t, "idem-1", other), "idem-1")
			},
			want: refusal{codes.InvalidArgument, "idempotency key already used for a different effect", reason(errorv1.ErrorReason_ERROR_REASON_IDEMPOTENCY_KEY_REUSED)},
			rows: 1,
		},
		{
			name: "key already used under another capability",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				if _, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", transferCall), "idem-1")); err != nil {
					t.Fatal(err)
				}
				return request(f.keys.capability(t, "idem-1", transferCall, func(c *receiptv1.Capability) { c.CapabilityId = "cap-2" }), "idem-1")
			},
			want: refusal{codes.InvalidArgument, "idempotency key already used for a different effect", reason(errorv1.ErrorReason_ERROR_REASON_IDEMPOTENCY_KEY_REUSED)},
			rows: 1,
		},
		{
			// The kernel judges expiry: it refuses a capability it never
			// redeemed, and the refusal passes through.
			name: "expired",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				f.clock.set(expires.Add(time.Nanosecond))
				return request(f.keys.capability(t, "idem-1", transferCall), "idem-1")
			},
			want: refusal{codes.FailedPrecondition, "capability cap-idem-1 is EXPIRED", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_EXPIRED)},
		},
		{
			name:   "kernel unreachable: nothing executed",
			kernel: &kernel{redeemErr: status.Error(codes.Unavailable, "connection refused")},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", transferCall), "idem-1")
			},
			want: refusal{codes.Unavailable, "kernel unreachable: nothing was executed", reason(errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE)},
		},
		{
			name:   "kernel too slow: nothing executed",
			kernel: &kernel{redeemErr: status.Error(codes.DeadlineExceeded, "context deadline exceeded")},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", transferCall), "idem-1")
			},
			want: refusal{codes.Unavailable, "kernel unreachable: nothing was executed", reason(errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE)},
		},
		{
			name: "kernel unreachable on a retry fails closed too",
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				req := request(f.keys.capability(t, "idem-1", transferCall), "idem-1")
				if _, err := f.h.Execute(agentCtx(), req); err != nil {
					t.Fatal(err)
				}
				f.kernel.set(status.Error(codes.Unavailable, "down"), nil)
				return req
			},
			want: refusal{codes.Unavailable, "kernel unreachable: nothing was executed", reason(errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE)},
			rows: 1,
		},
		{
			name:   "capability already used passes through with its reason",
			kernel: &kernel{redeemErr: usedErr},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", transferCall), "idem-1")
			},
			want: refusal{codes.FailedPrecondition, "capability cap-idem-1 is VERIFIED: its effect eff-1 is verified", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_USED)},
		},
		{
			name:   "revoked capability passes through with its reason",
			kernel: &kernel{redeemErr: revokedErr},
			setup: func(t *testing.T, f *fixture) *actionv1.ExecuteRequest {
				return request(f.keys.capability(t, "idem-1", transferCall), "idem-1")
			},
			want: refusal{codes.FailedPrecondition, "capability cap-idem-1 is REVOKED: accounts-v42 changed to accounts-v43", reason(errorv1.ErrorReason_ERROR_REASON_CAPABILITY_REVOKED)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.kernel
			if k == nil {
				k = &kernel{}
			}
			tg, _, _ := newTargets(t)
			f := newFixture(t, k, tg, options{})
			req := tt.setup(t, f)
			redeemedBefore, recordedBefore := k.counts()
			ctx := tt.ctx
			if ctx == nil {
				ctx = agentCtx()
			}
			resp, err := f.h.Execute(ctx, req)
			if resp != nil {
				t.Errorf("Execute returned %v", resp)
			}
			if diff := cmp.Diff(tt.want, refusalOf(err)); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			redeemed, recorded := k.counts()
			if redeemed != redeemedBefore || recorded != recordedBefore {
				t.Errorf("refused call redeemed %d and recorded %d, want nothing", redeemed-redeemedBefore, recorded-recordedBefore)
			}
			if rows := len(transfers(t, tg.targetDB())); rows != tt.rows {
				t.Errorf("target holds %d transfers, want %d", rows, tt.rows)
			}
			if tt.want.Reason == reason(errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST) {
				return // refused by the handler, before the core
			}
			refused := f.logs.FilterMessage("effect refused").All()
			if len(refused) != 1 || refused[0].ContextMap()["reason"] != tt.want.Reason {
				t.Errorf("refusal log lines %v, want one naming %s", refused, tt.want.Reason)
			}
		})
	}
}
