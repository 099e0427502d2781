package action_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ambitkernel/ambit/adapters/action"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

func toolcallHash(tool, args string) (string, error) {
	c, err := toolcall.Parse(tool, args)
	if err != nil {
		return "", err
	}
	return c.Hash(), nil
}

var (
	unavailable = refusal{codes.Unavailable, "executor target unavailable; retry with the same idempotency key", errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE.String()}
	refused     = refusal{codes.FailedPrecondition, "executor target refused the effect", errorv1.ErrorReason_ERROR_REASON_TARGET_REFUSED.String()}
	inDoubt     = refusal{codes.FailedPrecondition, "an earlier attempt at this effect may have happened; it is not repeated", errorv1.ErrorReason_ERROR_REASON_EFFECT_IN_DOUBT.String()}
)

// TestHTTPRetrySendsTheSameKey: a target that fails leaves the key
// Started; the retry sends the same request with the same
// Idempotency-Key, and the target, which deduplicates, acts once.
func TestHTTPRetrySendsTheSameKey(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   refusal
	}{
		{status: http.StatusServiceUnavailable, want: unavailable},
		// A target that asks to be sent the request again later has not
		// refused it.
		{status: http.StatusTooManyRequests, want: unavailable},
		{status: http.StatusRequestTimeout, want: unavailable},
		{status: http.StatusConflict, want: refused},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			tg, hook, _ := newTargets(t)
			k := &kernel{}
			f := newFixture(t, k, tg, options{})
			hook.failNext(1, tc.status)
			req := request(f.keys.capability(t, "idem-1", toolCall("notify", transferArgs)), "idem-1")
			_, err := f.h.Execute(agentCtx(), req)
			if diff := cmp.Diff(tc.want, refusalOf(err)); diff != "" {
				t.Fatalf("refusal (-want +got):\n%s", diff)
			}
			if e, _ := f.entry(t, "idem-1"); e.State != action.Started {
				t.Fatalf("key after the failure = %+v, want Started", e)
			}
			resp, err := f.h.Execute(agentCtx(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetRepeated() || resp.GetReceipt().GetRecordRef() != "n-1" || resp.GetReceipt().GetReceiptId() != "eff-0001" {
				t.Errorf("retry receipt %v, want a first receipt of effect eff-0001 referring to n-1", resp.GetReceipt())
			}
			requests, effects := hook.seen()
			if len(requests) != 2 || requests[0] != requests[1] || requests[0].Key != "idem-1" || effects != 1 {
				t.Errorf("target saw %v and performed %d effects; want the same request twice and one effect", requests, effects)
			}
		})
	}
}

// TestTargetRefusalSettlesTheKey: a target that refuses the effect and
// holds nothing of it (an sql table's constraint, whether the table shares
// the key table's transaction or not; an http 4xx) settles the key with a
// signed refusal receipt, which the kernel is sent; a retry is answered
// with the refusal and attempts nothing, and has the kernel log it again
// (idempotent there), so that a kernel that missed it learns it.
func TestTargetRefusalSettlesTheKey(t *testing.T) {
	for _, db := range databases {
		for _, tc := range []struct {
			tool   string
			target func(targets) string // the sql table refusing, or "" for the hook
			reason string
		}{
			{tool: "transfer", target: func(tg targets) string { return tg.targetDB() }, reason: "another unique column of the table refuses the row"},
			{tool: "transfer_here", target: func(tg targets) string { return tg.actionDB() }, reason: "another unique column of the table refuses the row"},
			{tool: "notify", reason: "402 Payment Required"},
		} {
			t.Run(db.name+"/"+tc.tool, func(t *testing.T) {
				tg, hook, _ := db.targets(t)
				k := &kernel{}
				f := newFixture(t, k, tg, options{})
				if tc.target != nil {
					// The effect's id is taken: the table refuses its row.
					runSQL(t, tc.target(tg), `INSERT INTO transfers (transfer_id, idempotency_key, account, currency, amount_minor, destination)
						VALUES ('eff-0001', 'idem-other', 'acct-1', 'GBP', 1, 'x')`)
				} else {
					hook.failNext(1, http.StatusPaymentRequired)
				}
				req := request(f.keys.capability(t, "idem-1", toolCall(tc.tool, transferArgs)), "idem-1")
				for attempt := range 2 {
					_, err := f.h.Execute(agentCtx(), req)
					if diff := cmp.Diff(refused, refusalOf(err)); diff != "" {
						t.Fatalf("attempt %d: refusal (-want +got):\n%s", attempt, diff)
					}
				}
				e, found := f.entry(t, "idem-1")
				if !found || !e.Refused() || e.EffectID != "eff-0001" {
					t.Fatalf("key after the refusal = %+v, want Done with a refusal receipt of eff-0001", e)
				}
				var r receiptv1.RefusalReceipt
				if err := (envelope.Keyring{"action": f.keys.actionPub}).Open(e.Receipt, "action", &r); err != nil {
					t.Fatal(err)
				}
				if r.GetReceiptId() != "eff-0001" || r.GetIdempotencyKey() != "idem-1" || r.GetCapabilityId() != "cap-idem-1" ||
					r.GetCall().GetTool() != tc.tool || !strings.Contains(r.GetReason(), tc.reason) || r.GetIssuer() != "action" {
					t.Errorf("refusal receipt %v, want eff-0001 of cap-idem-1 under idem-1 naming %q", &r, tc.reason)
				}
				redeemed, recorded := k.counts()
				if redeemed != 2 || recorded != 0 || len(k.refusals) != 2 || !proto.Equal(k.refusals[0], e.Receipt) || !proto.Equal(k.refusals[1], e.Receipt) {
					t.Errorf("kernel redeemed %d and was sent %d effects and %d refusals, want 2, none and the refusal twice", redeemed, recorded, len(k.refusals))
				}
				if tc.target != nil {
					if got := transfers(t, tc.target(tg)); len(got) != 1 || got[0].Key != "idem-other" {
						t.Errorf("target holds %v, want only the row that was there", got)
					}
				} else if requests, effects := hook.seen(); len(requests) != 1 || effects != 0 {
					t.Errorf("target saw %d requests and performed %d effects, want the one refused", len(requests), effects)
				}
			})
		}
	}
}

// TestEffectAfterARefusalIsInDoubt: another process settles a key as
// refused while this one's attempt at it succeeds (a target that changed
// its answer between the two). The effect exists: the answer is not the
// refusal but EFFECT_IN_DOUBT, logged as an error with the effect's
// reference, for the readback to settle.
func TestEffectAfterARefusalIsInDoubt(t *testing.T) {
	tg, _, _ := newTargets(t)
	k := &kernel{}
	f := newFixture(t, k, tg, options{afterCommit: func(f *fixture) {
		keys, done := f.keyTable(t)
		defer done()
		refusal, err := envelope.NewSigner("action", f.keys.actionPriv).Sign(&receiptv1.RefusalReceipt{ReceiptId: "eff-0001", Reason: "no"})
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.Finish(context.Background(), "idem-1", refusal); err != nil {
			t.Fatal(err)
		}
	}})
	req := request(f.keys.capability(t, "idem-1", toolCall("transfer", transferArgs)), "idem-1")
	if _, err := f.h.Execute(agentCtx(), req); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "it is not repeated") {
		t.Fatalf("Execute = %v, want EFFECT_IN_DOUBT", err)
	}
	if got := transfers(t, tg.targetDB()); len(got) != 1 {
		t.Errorf("target holds %v, want the effect", got)
	}
	logged := f.logs.FilterMessage("effect committed under a key settled as refused").All()
	if len(logged) != 1 || logged[0].Level != zap.ErrorLevel {
		t.Errorf("log lines %v, want one error naming the effect", logged)
	}
}

// TestUnrecordedRefusalIsSwept: a refusal the kernel could not log when it
// happened is sent by the sweep, as an effect receipt would be.
func TestUnrecordedRefusalIsSwept(t *testing.T) {
	tg, hook, _ := newTargets(t)
	k := &kernel{}
	f := newFixture(t, k, tg, options{})
	hook.failNext(1, http.StatusUnprocessableEntity)
	k.set(nil, status.Error(codes.Unavailable, "kernel down"))
	req := request(f.keys.capability(t, "idem-1", toolCall("notify", transferArgs)), "idem-1")
	if _, err := f.h.Execute(agentCtx(), req); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Execute = %v, want TARGET_REFUSED", err)
	}
	k.set(nil, nil)
	if n := f.core.Sweep(context.Background()); n != 1 {
		t.Fatalf("sweep recorded %d receipts, want the refusal", n)
	}
	e, _ := f.entry(t, "idem-1")
	if _, recorded := k.counts(); recorded != 0 || len(k.refusals) != 1 || !proto.Equal(k.refusals[0], e.Receipt) || !e.Refused() || !e.Recorded {
		t.Errorf("kernel was sent %d effects and %d refusals; key %+v; want the refusal alone, noted as recorded", recorded, len(k.refusals), e)
	}
}

// TestUnreachableTargetLeavesNoAttempt: a target nothing listens on
// certainly received nothing, so the key's attempt is removed and a
// retry is a first attempt again. The kernel redeemed the capability in
// time, so the retry is attempted even after its expiry: the kernel
// answers it as a retry (a capability redeemed and never carried out
// would otherwise stay open for good).
func TestUnreachableTargetLeavesNoAttempt(t *testing.T) {
	dead := newHookTarget(t)
	dead.srv.Close()
	deadMCP := newMCPTarget(t)
	for _, tc := range []struct {
		tool string
		cfg  action.ExecutorConfig
	}{
		{tool: "notify_dead", cfg: action.ExecutorConfig{HTTP: &action.HTTPExecutor{URL: dead.srv.URL}}},
		{tool: "message_dead", cfg: action.ExecutorConfig{MCP: &action.MCPExecutor{Server: mcpconn.Config{URL: dead.srv.URL}, Tool: "send_message",
			Arguments: map[string]string{"to": "args.account", "text": "args.note"}}}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tg, _, _ := newTargets(t)
			k := &kernel{}
			f := newFixture(t, k, tg, options{extra: map[string]action.ExecutorConfig{tc.tool: tc.cfg}})
			req := request(f.keys.capability(t, "idem-1", toolCall(tc.tool, transferArgs)), "idem-1")
			_, err := f.h.Execute(agentCtx(), req)
			if diff := cmp.Diff(unavailable, refusalOf(err)); diff != "" {
				t.Fatalf("refusal (-want +got):\n%s", diff)
			}
			if e, found := f.entry(t, "idem-1"); found {
				t.Fatalf("key row %+v left behind, want none", e)
			}
			f.clock.set(expires.Add(time.Second))
			_, err = f.h.Execute(agentCtx(), req)
			if diff := cmp.Diff(unavailable, refusalOf(err)); diff != "" {
				t.Errorf("retry after expiry (-want +got):\n%s", diff)
			}
			if e, found := f.entry(t, "idem-1"); found {
				t.Fatalf("key row %+v left behind by the retry, want none", e)
			}
			if redeemed, _ := k.counts(); redeemed != 2 {
				t.Errorf("kernel asked to redeem %d times, want 2 (the attempt and its retry)", redeemed)
			}
		})
	}
	if calls, _, _ := deadMCP.seen(); len(calls) != 0 {
		t.Errorf("an unrelated server was called: %v", calls)
	}
}

// TestMCPWithoutKeyIsNeverCalledTwice: a tool that takes no idempotency
// key and did not confirm the effect is not called again: the retry is
// EFFECT_IN_DOUBT and logged.
func TestMCPWithoutKeyIsNeverCalledTwice(t *testing.T) {
	tg, _, m := newTargets(t)
	k := &kernel{}
	f := newFixture(t, k, tg, options{})
	args := `{"account":"acct-7","note":"refuse"}`
	req := request(f.keys.capability(t, "idem-1", toolCall("send_message", args)), "idem-1")
	_, err := f.h.Execute(agentCtx(), req)
	if diff := cmp.Diff(refused, refusalOf(err)); diff != "" {
		t.Fatalf("tool error result (-want +got):\n%s", diff)
	}
	_, err = f.h.Execute(agentCtx(), req)
	if diff := cmp.Diff(inDoubt, refusalOf(err)); diff != "" {
		t.Fatalf("retry (-want +got):\n%s", diff)
	}
	if calls, _, _ := m.seen(); len(calls) != 1 {
		t.Errorf("tool called %d times, want once", len(calls))
	}
	if n := f.logs.FilterMessage("effect in doubt: not attempted again").Len(); n != 1 {
		t.Errorf("%d in-doubt log lines, want 1", n)
	}
	if e, _ := f.entry(t, "idem-1"); e.State != action.Started {
		t.Errorf("key = %+v, want it left Started for the readback", e)
	}
}

// TestRecordRefUnreadable: a target that performed the effect but whose
// reply gives no record reference leaves it in doubt, not failed.
func TestRecordRefUnreadable(t *testing.T) {
	tg, hook, _ := newTargets(t)
	f := newFixture(t, &kernel{}, tg, options{extra: map[string]action.ExecutorConfig{
		"notify_ref": {HTTP: &action.HTTPExecutor{URL: tg.Hook, RecordRef: "result.reference"}},
	}})
	_, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", toolCall("notify_ref", transferArgs)), "idem-1"))
	if diff := cmp.Diff(inDoubt, refusalOf(err)); diff != "" {
		t.Fatalf("refusal (-want +got):\n%s", diff)
	}
	if _, effects := hook.seen(); effects != 1 {
		t.Errorf("target performed %d effects, want 1", effects)
	}
	if e, _ := f.entry(t, "idem-1"); e.State != action.Started {
		t.Errorf("key = %+v, want Started", e)
	}
}

// TestSQLTargetDecidesAStartedKey: a key left Started is settled by the
// target's row: missing, it is written now; holding exactly this call's
// values, it is this effect; holding other values, it is in doubt.
func TestSQLTargetDecidesAStartedKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		// row is written to the target before the retry; empty for none.
		row  string
		want *refusal
		rows int
	}{
		{name: "no row: written now", rows: 1},
		{name: "this effect's row", row: `INSERT INTO transfers VALUES ('eff-0001', 'idem-1', 'acct-7', 'GBP', 1740.0, 'own_account', NULL)`, rows: 1},
		{name: "another row under the key", row: `INSERT INTO transfers VALUES ('eff-0001', 'idem-1', 'acct-9', 'GBP', 1740, 'own_account', NULL)`, want: &inDoubt, rows: 1},
	} {
		for _, db := range databases {
			t.Run(db.name+"/"+tc.name, func(t *testing.T) {
				tg, _, _ := db.targets(t)
				k := &kernel{}
				f := newFixture(t, k, tg, options{})
				startKey(t, f, "idem-1", "transfer", "eff-0001")
				if tc.row != "" {
					runSQL(t, tg.targetDB(), tc.row)
				}
				resp, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", toolCall("transfer", transferArgs)), "idem-1"))
				if tc.want != nil {
					if diff := cmp.Diff(*tc.want, refusalOf(err)); diff != "" {
						t.Errorf("refusal (-want +got):\n%s", diff)
					}
				} else if err != nil || resp.GetReceipt().GetReceiptId() != "eff-0001" || resp.GetReceipt().GetRecordRef() != "eff-0001" {
					t.Errorf("Execute = %v, %v; want the receipt of effect eff-0001", resp, err)
				}
				if rows := len(transfers(t, tg.targetDB())); rows != tc.rows {
					t.Errorf("target holds %d rows, want %d", rows, tc.rows)
				}
			})
		}
	}
}

// startKey writes a Started row for key, as an attempt that crashed
// before its effect or its receipt leaves it.
func startKey(t *testing.T, f *fixture, key, tool, effectID string) {
	t.Helper()
	call, err := toolcallHash(tool, transferArgs)
	if err != nil {
		t.Fatal(err)
	}
	keys, done := f.keyTable(t)
	defer done()
	if err := keys.Start(context.Background(), action.Entry{Key: key, CapabilityID: "cap-" + key, TaskID: "task-1", Tool: tool,
		CallHash: call, EffectID: effectID, StartedAt: now}); err != nil {
		t.Fatal(err)
	}
}

// TestNoReceiptUnlessRecorded: the effect commits but the kernel cannot
// log it, so no receipt is returned; a retry completes it with the first
// receipt, and nothing is repeated.
func TestNoReceiptUnlessRecorded(t *testing.T) {
	tg, _, _ := newTargets(t)
	k := &kernel{recordErr: status.Error(codes.Unavailable, "down")}
	f := newFixture(t, k, tg, options{})
	req := request(f.keys.capability(t, "idem-1", toolCall("transfer", transferArgs)), "idem-1")
	resp, err := f.h.Execute(agentCtx(), req)
	if resp != nil {
		t.Fatalf("Execute returned a receipt the kernel has not logged: %v", resp)
	}
	want := refusal{codes.Unavailable, "effect committed but not yet recorded; retry with the same idempotency key", errorv1.ErrorReason_ERROR_REASON_EFFECT_NOT_RECORDED.String()}
	if diff := cmp.Diff(want, refusalOf(err)); diff != "" {
		t.Fatalf("refusal (-want +got):\n%s", diff)
	}
	e, _ := f.entry(t, "idem-1")
	if e.State != action.Done || e.Recorded {
		t.Fatalf("key = %+v, want Done and unrecorded", e)
	}
	k.set(nil, nil)
	again, err := f.h.Execute(agentCtx(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.GetRepeated() || !proto.Equal(again.GetSignedReceipt(), e.Receipt) {
		t.Error("retry did not return the first receipt as repeated")
	}
	if e, _ := f.entry(t, "idem-1"); !e.Recorded {
		t.Error("key not marked recorded after the retry")
	}
	if rows := len(transfers(t, tg.targetDB())); rows != 1 {
		t.Errorf("%d rows, want 1", rows)
	}
}

func TestSweepRecordsWhatTheAgentNeverRetried(t *testing.T) {
	tg, _, _ := newTargets(t)
	k := &kernel{recordErr: status.Error(codes.Unavailable, "down")}
	f := newFixture(t, k, tg, options{})
	// The databases' and servers' goroutines end in t.Cleanup; the
	// sweep's must end when its context does.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := agentCtx()
	for _, key := range []string{"idem-1", "idem-2"} {
		if _, err := f.h.Execute(ctx, request(f.keys.capability(t, key, toolCall("transfer_here", transferArgs)), key)); status.Code(err) != codes.Unavailable {
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
	// Done when both are marked recorded: the kernel counting them is not
	// enough, as a sweep stopped between the kernel's log and its answer
	// cannot know, and sends the receipt again. The loop notes them itself
	// (at its next pass, or marksDelay after the first).
	deadline := time.Now().Add(5 * time.Second)
	for {
		e1, _ := f.stored(t, "idem-1")
		e2, _ := f.stored(t, "idem-2")
		if e1.Recorded && e2.Recorded {
			break
		}
		if time.Now().After(deadline) {
			_, recorded := k.counts()
			t.Fatalf("the sweep's loop did not mark both effects recorded (the kernel logged %d)", recorded)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunSweep = %v", err)
	}
	if _, recorded := k.counts(); recorded != 2 {
		t.Errorf("the kernel logged %d receipts, want 2", recorded)
	}
	if n := f.core.Sweep(ctx); n != 0 {
		t.Errorf("second Sweep re-sent %d", n)
	}
}

// TestRecordedNotedAfterTheAnswer: the key table notes that the kernel has
// logged a receipt after the answer, in one batch for many effects; the
// sweep notes what is pending before it looks for receipts to send, so it
// sends none of them again; and the sweep's loop notes them as they come.
func TestRecordedNotedAfterTheAnswer(t *testing.T) {
	tg, _, _ := newTargets(t)
	k := &kernel{}
	f := newFixture(t, k, tg, options{})
	ctx := agentCtx()
	keys := []string{"idem-1", "idem-2", "idem-3"}
	for _, key := range keys {
		if _, err := f.h.Execute(ctx, request(f.keys.capability(t, key, toolCall("transfer_here", transferArgs)), key)); err != nil {
			t.Fatalf("Execute(%s) = %v", key, err)
		}
	}
	db, err := sqldb.Open(f.tg.actionDB())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var unmarked int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ambit_effect_keys WHERE recorded = 0`).Scan(&unmarked); err != nil || unmarked != len(keys) {
		t.Fatalf("before a flush %d keys unmarked (%v), want %d", unmarked, err, len(keys))
	}
	if n := f.core.Sweep(ctx); n != 0 {
		t.Errorf("Sweep sent %d receipts the kernel had logged", n)
	}
	if _, recorded := k.counts(); recorded != len(keys) {
		t.Errorf("kernel was sent %d receipts, want %d", recorded, len(keys))
	}
	for _, key := range keys {
		if e, _ := f.entry(t, key); !e.Recorded {
			t.Errorf("%s not marked recorded", key)
		}
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.core.RunSweep(runCtx, time.Hour) }()
	if _, err := f.h.Execute(ctx, request(f.keys.capability(t, "idem-4", toolCall("transfer_here", transferArgs)), "idem-4")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var recorded bool
		if err := db.QueryRow(`SELECT recorded FROM ambit_effect_keys WHERE idempotency_key = 'idem-4'`).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if recorded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweep's loop did not note idem-4 recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunSweep = %v", err)
	}
}

// TestAfterCommitRunsBetweenEffectAndRecord: the hook runs once, after the
// effect is at the target and before the kernel hears of it; the key is
// still Started unless the effect shares the adapter's database.
func TestAfterCommitRunsBetweenEffectAndRecord(t *testing.T) {
	for _, tc := range []struct {
		tool  string
		db    func(targets) string
		state action.State
	}{
		{tool: "transfer", db: targets.targetDB, state: action.Started},
		{tool: "transfer_here", db: targets.actionDB, state: action.Done},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tg, _, _ := newTargets(t)
			k := &kernel{}
			var rows, recorded int
			var state action.State
			f := newFixture(t, k, tg, options{afterCommit: func(f *fixture) {
				f.hooks++
				_, recorded = k.counts()
				rows = len(transfers(t, tc.db(tg)))
				e, _ := f.entry(t, "idem-1")
				state = e.State
			}})
			req := request(f.keys.capability(t, "idem-1", toolCall(tc.tool, transferArgs)), "idem-1")
			for range 2 {
				if _, err := f.h.Execute(agentCtx(), req); err != nil {
					t.Fatal(err)
				}
			}
			if f.hooks != 1 {
				t.Errorf("hook ran %d times, want once (only an effect runs it)", f.hooks)
			}
			if rows != 1 || recorded != 0 || state != tc.state {
				t.Errorf("at the hook: %d rows, %d records, key %v; want 1, 0, %v", rows, recorded, state, tc.state)
			}
		})
	}
}

// TestConcurrentRetriesExecuteOnce races retries of one key: exactly one
// answer is not repeated, all carry the same receipt, the target holds one
// effect.
func TestConcurrentRetriesExecuteOnce(t *testing.T) {
	for _, tool := range []string{"transfer", "transfer_here", "notify", "send_message"} {
		for _, db := range databases {
			t.Run(db.name+"/"+tool, func(t *testing.T) {
				tg, hook, m := db.targets(t)
				f := newFixture(t, &kernel{}, tg, options{})
				req := request(f.keys.capability(t, "idem-1", toolCall(tool, transferArgs)), "idem-1")
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
				_, hooked := hook.seen()
				_, credits, messages := m.seen()
				effects := len(transfers(t, tg.targetDB())) + len(transfers(t, tg.actionDB())) + hooked + credits + messages
				if effects != 1 {
					t.Errorf("%d effects at the targets, want 1", effects)
				}
			})
		}
	}
}

// TestTwoAdaptersOneKey runs two adapters on the same databases, as two
// processes would, and races one key across them: the key table's
// primary key and the target's unique key keep it to one effect, and
// every answer carries the receipt the key table holds.
func TestTwoAdaptersOneKey(t *testing.T) {
	for _, tool := range []string{"transfer", "transfer_here"} {
		for _, db := range databases {
			t.Run(db.name+"/"+tool, func(t *testing.T) {
				tg, _, _ := db.targets(t)
				shared := newKeys(t)
				// Each process draws its own ids, as random ones never meet:
				// the fixtures' counters would both start at 0001.
				second := func(d *action.Deps) {
					next := d.NewID
					d.NewID = func() string { return "b" + next() }
				}
				adapters := []*fixture{
					newFixture(t, &kernel{}, tg, options{keys: &shared}),
					newFixture(t, &kernel{}, tg, options{keys: &shared, deps: second}),
				}
				req := request(shared.capability(t, "idem-1", toolCall(tool, transferArgs)), "idem-1")
				const n = 8
				resps := make([]*actionv1.ExecuteResponse, 2*n)
				errs := make([]error, 2*n)
				var wg sync.WaitGroup
				for i := range 2 * n {
					wg.Go(func() { resps[i], errs[i] = adapters[i%2].h.Execute(agentCtx(), req) })
				}
				wg.Wait()
				e, _ := adapters[0].entry(t, "idem-1")
				for i := range 2 * n {
					if errs[i] != nil {
						t.Fatalf("Execute %d: %v", i, errs[i])
					}
					if !proto.Equal(resps[i].GetSignedReceipt(), e.Receipt) {
						t.Errorf("Execute %d returned a receipt the key table does not hold", i)
					}
				}
				if rows := len(transfers(t, tg.targetDB())) + len(transfers(t, tg.actionDB())); rows != 1 {
					t.Errorf("%d rows at the targets, want 1", rows)
				}
			})
		}
	}
}

// TestExecutorsServeManyCalls executes several keys through each executor:
// connections and sessions are reused, one effect per key.
func TestExecutorsServeManyCalls(t *testing.T) {
	tg, hook, m := newTargets(t)
	f := newFixture(t, &kernel{}, tg, options{})
	tools := []string{"transfer", "transfer_here", "notify", "notify_raw", "issue_credit", "send_message"}
	for i := range 3 {
		for _, tool := range tools {
			key := tool + "-" + string(rune('a'+i))
			if _, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, key, toolCall(tool, transferArgs)), key)); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		}
	}
	_, hooked := hook.seen()
	calls, credits, messages := m.seen()
	got := []int{len(transfers(t, tg.targetDB())), len(transfers(t, tg.actionDB())), hooked, len(calls), credits, messages}
	if diff := cmp.Diff([]int{3, 3, 6, 6, 3, 3}, got); diff != "" {
		t.Errorf("effects: transfers there, here, hook, mcp calls, credits, messages (-want +got):\n%s", diff)
	}
}
