package action_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/action"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// kernel is an in-test implementation of action.Kernel: it counts calls,
// keeps what it was sent and answers with the configured errors. Like the
// real kernel (which runs in the end-to-end tests) it refuses an expired
// capability it never redeemed and answers a retry of one it redeemed,
// expired or not.
type kernel struct {
	mu        sync.Mutex
	redeemed  int
	redeems   []*kernelv1.RedeemCapabilityRequest
	recorded  []*receiptv1.Envelope // effect receipts
	refusals  []*receiptv1.Envelope // refusal receipts
	redeemErr error
	recordErr error
	// now is the fixture's clock; ids are the capabilities redeemed.
	now func() time.Time
	ids map[string]bool
}

var _ action.Kernel = (*kernel)(nil)

func (k *kernel) RedeemCapability(_ context.Context, in *kernelv1.RedeemCapabilityRequest, _ ...grpc.CallOption) (*kernelv1.RedeemCapabilityResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.redeemErr != nil {
		return nil, k.redeemErr
	}
	var c receiptv1.Capability
	if err := proto.Unmarshal(in.GetCapability().GetPayload(), &c); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	first := !k.ids[c.GetCapabilityId()]
	if first && k.now != nil && k.now().After(c.GetExpiresAt().AsTime()) {
		return nil, serve.Error(codes.FailedPrecondition, errorv1.ErrorReason_ERROR_REASON_CAPABILITY_EXPIRED,
			"capability "+c.GetCapabilityId()+" is EXPIRED")
	}
	if k.ids == nil {
		k.ids = map[string]bool{}
	}
	k.ids[c.GetCapabilityId()] = true
	k.redeemed++
	k.redeems = append(k.redeems, in)
	return &kernelv1.RedeemCapabilityResponse{First: first}, nil
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

func (k *kernel) RecordRefusal(_ context.Context, in *kernelv1.RecordRefusalRequest, _ ...grpc.CallOption) (*kernelv1.RecordRefusalResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.recordErr != nil {
		return nil, k.recordErr
	}
	k.refusals = append(k.refusals, in.GetReceipt())
	return &kernelv1.RecordRefusalResponse{}, nil
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

// The call most tests execute: a money transfer to an account.
const transferArgs = `{"account":"acct-7","amount":{"currency_code":"GBP","minor_units":1740},"note":"approved"}`

func toolCall(tool, args string) *contractv1.ToolCall {
	return &contractv1.ToolCall{Tool: tool, ArgumentsJson: args}
}

type keys struct {
	kernelPub  ed25519.PublicKey
	kernelPriv ed25519.PrivateKey
	actionPub  ed25519.PublicKey
	actionPriv ed25519.PrivateKey
}

func newKeys(t testing.TB) keys {
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

// capability signs a capability for call under key; edit adjusts it
// before signing.
func (k keys) capability(t testing.TB, key string, call *contractv1.ToolCall, edit ...func(*receiptv1.Capability)) *receiptv1.Envelope {
	t.Helper()
	c := &receiptv1.Capability{
		CapabilityId: "cap-" + key, DecisionId: "dec-1", TaskId: "task-1", ContractHash: "h",
		Call: call, Destination: "own_account", Record: "accounts_db/acct-7", StateVersion: "accounts-v42",
		IdempotencyKey: key, IssuedAt: timestamppb.New(now.Add(-time.Minute)), ExpiresAt: timestamppb.New(expires), Holder: "agent",
	}
	for _, e := range edit {
		e(c)
	}
	env, err := envelope.NewSigner("kernel", k.kernelPriv).Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func request(capability *receiptv1.Envelope, key string) *actionv1.ExecuteRequest {
	return &actionv1.ExecuteRequest{Capability: capability, IdempotencyKey: key}
}

// agentCtx is a request context whose caller is the agent, as the serving
// interceptor leaves it.
func agentCtx() context.Context {
	return serve.WithCaller(context.Background(), pki.Identity{Name: "agent", Role: pki.RoleAgent})
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

// transfersSchema is a target table: the key column is UNIQUE, so the
// table itself refuses a second row for a key.
const transfersSchema = `CREATE TABLE IF NOT EXISTS transfers (
	transfer_id     TEXT PRIMARY KEY,
	idempotency_key TEXT NOT NULL UNIQUE,
	account         TEXT NOT NULL,
	currency        TEXT NOT NULL,
	amount_minor    INTEGER NOT NULL,
	destination     TEXT NOT NULL,
	note            TEXT
)`

// transferColumns maps the transfer call onto the table.
func transferColumns() map[string]string {
	return map[string]string{
		"transfer_id":  "effect.id",
		"account":      "args.account",
		"currency":     "args.amount.currency_code",
		"amount_minor": "args.amount.minor_units",
		"destination":  "call.destination",
	}
}

// runSQL runs statements on the database at path, creating it.
func runSQL(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sqldb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// transfer is one row of a transfers table.
type transfer struct {
	ID, Key, Account, Currency, Destination string
	Minor                                   int64
}

// transfers reads every row of the transfers table at path.
func transfers(t testing.TB, path string) []transfer {
	t.Helper()
	db, err := sqldb.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT transfer_id, idempotency_key, account, currency, destination, amount_minor FROM transfers ORDER BY transfer_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []transfer
	for rows.Next() {
		var r transfer
		if err := rows.Scan(&r.ID, &r.Key, &r.Account, &r.Currency, &r.Destination, &r.Minor); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// hookTarget is a real HTTP server that records every request and
// performs one effect per Idempotency-Key, as a target that deduplicates
// does.
type hookTarget struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []hookRequest
	effects  map[string]string // key → effect id
	// fail, while positive, answers that many requests with failStatus
	// before performing anything.
	fail       int
	failStatus int
}

type hookRequest struct {
	Key, ContentType, Body string
}

func newHookTarget(t testing.TB) *hookTarget {
	h := &hookTarget{effects: map[string]string{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookTarget) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	h.requests = append(h.requests, hookRequest{Key: key, ContentType: r.Header.Get("Content-Type"), Body: string(body)})
	if h.fail > 0 {
		h.fail--
		w.WriteHeader(h.failStatus)
		return
	}
	id, seen := h.effects[key]
	if !seen {
		id = fmt.Sprintf("n-%d", len(h.effects)+1)
		h.effects[key] = id
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "repeated": seen})
}

func (h *hookTarget) failNext(n, status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail, h.failStatus = n, status
}

func (h *hookTarget) seen() (requests []hookRequest, effects int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.requests...), len(h.effects)
}

// creditIn is what the upstream MCP tools take.
type creditIn struct {
	Account        string `json:"account"`
	AmountMinor    int64  `json:"amount_minor"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

type creditOut struct {
	CreditID string `json:"credit_id"`
}

type messageIn struct {
	To   string `json:"to"`
	Text string `json:"text"`
}

type messageOut struct {
	MessageID string `json:"message_id"`
}

// mcpTarget is a real MCP server on a loopback HTTP listener with two
// tools: issue_credit deduplicates on its idempotency_key argument,
// send_message has no key and acts on every call.
type mcpTarget struct {
	url string

	mu       sync.Mutex
	credits  map[string]string
	calls    []string // tool names, in order
	messages []messageIn
}

func newMCPTarget(t testing.TB) *mcpTarget {
	m := &mcpTarget{credits: map[string]string{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "target", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "issue_credit"}, func(_ context.Context, _ *mcp.CallToolRequest, in creditIn) (*mcp.CallToolResult, creditOut, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.calls = append(m.calls, "issue_credit")
		id, ok := m.credits[in.IdempotencyKey]
		if !ok {
			id = fmt.Sprintf("cr-%d", len(m.credits)+1)
			m.credits[in.IdempotencyKey] = id
		}
		return nil, creditOut{CreditID: id}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "send_message"}, func(_ context.Context, _ *mcp.CallToolRequest, in messageIn) (*mcp.CallToolResult, messageOut, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.calls = append(m.calls, "send_message")
		if in.Text == "refuse" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "recipient blocked"}}}, messageOut{}, nil
		}
		m.messages = append(m.messages, in)
		return nil, messageOut{MessageID: fmt.Sprintf("m-%d", len(m.messages))}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	m.url = srv.URL
	return m
}

func (m *mcpTarget) seen() (calls []string, credits, messages int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...), len(m.credits), len(m.messages)
}

// targets are the places the test executors write to.
type targets struct {
	// Dir holds action.db (the adapter's own database, which also has a
	// transfers table) and target.db (another database with one), unless
	// Action and Target name two PostgreSQL databases instead.
	Dir    string `json:"dir"`
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
	Hook   string `json:"hook"`
	MCP    string `json:"mcp"`
}

func (tg targets) actionDB() string {
	if tg.Action != "" {
		return tg.Action
	}
	return filepath.Join(tg.Dir, "action.db")
}

func (tg targets) targetDB() string {
	if tg.Target != "" {
		return tg.Target
	}
	return filepath.Join(tg.Dir, "target.db")
}

// newTargets starts an HTTP and an MCP target and creates both databases:
// SQLite files.
func newTargets(t testing.TB) (targets, *hookTarget, *mcpTarget) {
	t.Helper()
	hook, m := newHookTarget(t), newMCPTarget(t)
	tg := targets{Dir: t.TempDir(), Hook: hook.srv.URL, MCP: m.url}
	runSQL(t, tg.actionDB(), transfersSchema)
	runSQL(t, tg.targetDB(), transfersSchema)
	return tg, hook, m
}

// newPostgresTargets is newTargets with both databases on PostgreSQL
// (skipped without a server, see pgtest).
func newPostgresTargets(t testing.TB) (targets, *hookTarget, *mcpTarget) {
	t.Helper()
	tg := targets{Action: pgtest.Database(t), Target: pgtest.Database(t)}
	hook, m := newHookTarget(t), newMCPTarget(t)
	tg.Dir, tg.Hook, tg.MCP = t.TempDir(), hook.srv.URL, m.url
	runSQL(t, tg.actionDB(), transfersSchema)
	runSQL(t, tg.targetDB(), transfersSchema)
	return tg, hook, m
}

// databases are the databases the key table and the sql executors run
// on: a test of them runs on each.
var databases = []struct {
	name    string
	targets func(testing.TB) (targets, *hookTarget, *mcpTarget)
	// empty returns a new empty database.
	empty func(testing.TB) string
}{
	{"sqlite", newTargets, func(t testing.TB) string { return filepath.Join(t.TempDir(), "test.db") }},
	{"postgres", newPostgresTargets, pgtest.Database},
}

// executors are the test configuration's executors:
//   - transfer: sql into another database (the key protocol applies);
//   - transfer_here: sql into the adapter's own database (one transaction);
//   - notify: http with a mapped body and a record_ref from the reply;
//   - notify_raw: http sending the call's arguments;
//   - issue_credit: mcp tool that takes the idempotency key;
//   - send_message: mcp tool without one.
func (tg targets) executors() map[string]action.ExecutorConfig {
	return map[string]action.ExecutorConfig{
		"transfer":      {SQL: &action.SQLExecutor{Database: tg.targetDB(), Table: "transfers", KeyColumn: "idempotency_key", Columns: transferColumns()}},
		"transfer_here": {SQL: &action.SQLExecutor{Database: tg.here(), Table: "transfers", KeyColumn: "idempotency_key", Columns: transferColumns()}},
		"notify": {HTTP: &action.HTTPExecutor{URL: tg.Hook + "/hook", RecordRef: "result.id", Body: map[string]string{
			"to": "args.account", "amount": "args.amount", "key": "effect.idempotency_key", "task": "effect.task_id",
		}}},
		"notify_raw": {HTTP: &action.HTTPExecutor{URL: tg.Hook + "/raw"}},
		"issue_credit": {MCP: &action.MCPExecutor{Server: mcpconn.Config{URL: tg.MCP}, Tool: "issue_credit", RecordRef: "result.credit_id",
			Arguments: map[string]string{"account": "args.account", "amount_minor": "args.amount.minor_units", "idempotency_key": "effect.idempotency_key"}}},
		"send_message": {MCP: &action.MCPExecutor{Server: mcpconn.Config{URL: tg.MCP}, Tool: "send_message", RecordRef: "result.message_id",
			Arguments: map[string]string{"to": "args.account", "text": "args.note"}}},
	}
}

// here names the adapter's own database otherwise than its key table
// does (sqlite:PATH), as a configuration may: it is still the one
// database, and so one transaction.
func (tg targets) here() string {
	if sqldb.IsPostgres(tg.actionDB()) {
		return tg.actionDB()
	}
	return "sqlite:" + tg.actionDB()
}

type fixture struct {
	keys   keys
	kernel *kernel
	tg     targets
	core   *action.Core
	h      *action.Handler
	clock  *clock
	logs   *observer.ObservedLogs
	hooks  int
}

// options adjust a fixture.
type options struct {
	keys        *keys
	afterCommit func(*fixture)
	checks      map[string]action.StateCheckConfig
	// extra executors beside the targets' own.
	extra map[string]action.ExecutorConfig
	deps  func(*action.Deps)
}

// newFixture builds a core over the targets' databases, as Run does.
func newFixture(t testing.TB, k *kernel, tg targets, o options) *fixture {
	t.Helper()
	f := &fixture{kernel: k, tg: tg, clock: &clock{t: now}}
	k.mu.Lock()
	k.now = f.clock.now
	k.mu.Unlock()
	if o.keys != nil {
		f.keys = *o.keys
	} else {
		f.keys = newKeys(t)
	}
	ctx := context.Background()
	dbs := action.NewDatabases(sqldb.DurabilityFull)
	t.Cleanup(func() { _ = dbs.Close() })
	db, err := dbs.Open(tg.actionDB())
	if err != nil {
		t.Fatal(err)
	}
	keyTable, err := action.OpenKeys(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cfgs := tg.executors()
	for tool, c := range o.extra {
		cfgs[tool] = c
	}
	executors, err := action.OpenExecutors(ctx, cfgs, dbs, "action")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = action.CloseExecutors(executors) })
	checks, err := action.OpenStateChecks(ctx, o.checks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = action.CloseStateChecks(checks) })
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
		Keys:          keyTable,
		Executors:     executors,
		StateChecks:   checks,
	}
	if o.afterCommit != nil {
		d.AfterCommit = func() { o.afterCommit(f) }
	}
	if o.deps != nil {
		o.deps(&d)
	}
	if f.core, err = action.NewCore(d); err != nil {
		t.Fatal(err)
	}
	f.h = action.NewHandler(f.core)
	return f
}

// entry reads a key's row of the adapter's key table, once the receipts
// the kernel has logged are noted in it (they are noted after the answer).
func (f *fixture) entry(t testing.TB, key string) (action.Entry, bool) {
	t.Helper()
	f.core.FlushMarks(context.Background())
	return f.stored(t, key)
}

// stored reads a key's row as the table holds it, noting nothing: beside a
// running sweep, whose loop alone notes what the kernel logged. A flush
// from here could take the notes the sweep is about to write, and the
// sweep would then find the receipts unnoted and send them again.
func (f *fixture) stored(t testing.TB, key string) (action.Entry, bool) {
	t.Helper()
	k, done := f.keyTable(t)
	defer done()
	e, found, err := k.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return e, found
}

// keyTable opens the adapter's key table on a connection of its own, as
// another process sharing the table would; done closes it.
func (f *fixture) keyTable(t testing.TB) (keys *action.Keys, done func()) {
	t.Helper()
	db, err := sqldb.Open(f.tg.actionDB())
	if err != nil {
		t.Fatal(err)
	}
	keys, err = action.OpenKeys(context.Background(), db)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return keys, func() { _ = db.Close() }
}

// refusal is a status as a comparable value: code, message and the
// ErrorReason it carries.
type refusal struct {
	Code    codes.Code
	Message string
	Reason  string
}

func refusalOf(err error) refusal {
	st := status.Convert(err)
	return refusal{Code: st.Code(), Message: st.Message(), Reason: serve.Reason(err).String()}
}
