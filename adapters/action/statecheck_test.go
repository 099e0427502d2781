package action_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/ambitkernel/ambit/adapters/action"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
)

// accountsDB writes the system of record of the accounts source:
// acct-7 at accounts-v42. It returns its path and the state check
// configuration reading it.
func accountsDB(t *testing.T) (string, map[string]action.StateCheckConfig) {
	t.Helper()
	return accountsIn(t, filepath.Join(t.TempDir(), "accounts.db"))
}

// accountsIn is accountsDB in the empty database path.
func accountsIn(t *testing.T, path string) (string, map[string]action.StateCheckConfig) {
	t.Helper()
	runSQL(t, path,
		`CREATE TABLE accounts (account_id TEXT PRIMARY KEY, owner TEXT NOT NULL, row_version INTEGER)`,
		`INSERT INTO accounts VALUES ('acct-7', 'employee-7', 42)`)
	return path, map[string]action.StateCheckConfig{
		"accounts_db": {SQL: &action.SQLStateCheck{
			Database: path, Table: "accounts", Key: "account_id",
			StateVersion: `"accounts-v" + string(record.row_version)`, Columns: []string{"row_version"},
		}},
	}
}

// TestStateCheck: a first execution re-reads the capability's record and
// refuses, before redeeming anything, when it is no longer at the bound
// state version.
func TestStateCheck(t *testing.T) {
	reason := func(r errorv1.ErrorReason) string { return r.String() }
	unreadable := &refusal{codes.Unavailable, "record state unreadable: nothing was executed", reason(errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE)}
	tests := []struct {
		name string
		// change runs on the accounts database after the adapter opened it.
		change []string
		// edit adjusts the capability.
		edit func(*receiptv1.Capability)
		want *refusal // nil: executed
		// logged is part of the refusal's logged error.
		logged string
	}{
		{name: "record unchanged"},
		{
			name:   "record edited since the decision",
			change: []string{`UPDATE accounts SET owner = 'someone-else', row_version = 43`},
			want: &refusal{codes.FailedPrecondition, "record accounts_db/acct-7 changed since the decision (accounts-v42 → accounts-v43): nothing was executed",
				reason(errorv1.ErrorReason_ERROR_REASON_STATE_VERSION_CHANGED)},
		},
		{
			name:   "record gone",
			change: []string{`DELETE FROM accounts`},
			want: &refusal{codes.FailedPrecondition, "record accounts_db/acct-7 is gone since the decision (accounts-v42): nothing was executed",
				reason(errorv1.ErrorReason_ERROR_REASON_STATE_VERSION_CHANGED)},
		},
		{
			name:   "table unreadable",
			change: []string{`DROP TABLE accounts`},
			want:   unreadable,
		},
		{
			name:   "state version does not evaluate",
			change: []string{`UPDATE accounts SET row_version = NULL`},
			want:   unreadable,
		},
		// Qualified, a column dropped or renamed since the start is an
		// error; bare, SQLite would read its quoted name as a string, a
		// constant that says nothing of the record.
		{
			name:   "version column dropped",
			change: []string{`ALTER TABLE accounts DROP COLUMN row_version`},
			want:   unreadable,
			logged: "accounts.row_version",
		},
		{
			name:   "version column renamed",
			change: []string{`ALTER TABLE accounts RENAME COLUMN row_version TO version`},
			want:   unreadable,
			logged: "accounts.row_version",
		},
		{
			name:   "version column dropped, capability bound to what its bare name reads as",
			change: []string{`ALTER TABLE accounts DROP COLUMN row_version`},
			edit:   func(c *receiptv1.Capability) { c.StateVersion = "accounts-vrow_version" },
			want:   unreadable,
			logged: "accounts.row_version",
		},
		{
			name:   "capability binds no state version",
			change: []string{`UPDATE accounts SET row_version = 43`},
			edit:   func(c *receiptv1.Capability) { c.StateVersion = "" },
		},
		{
			name:   "record of a source without a state check",
			change: []string{`UPDATE accounts SET row_version = 43`},
			edit:   func(c *receiptv1.Capability) { c.Record = "tickets/T-1" },
		},
		{
			name:   "capability binds no record",
			change: []string{`DELETE FROM accounts`},
			edit:   func(c *receiptv1.Capability) { c.Record = "" },
		},
	}
	for _, tt := range tests {
		for _, db := range databases {
			t.Run(db.name+"/"+tt.name, func(t *testing.T) {
				path, checks := accountsIn(t, db.empty(t))
				tg, _, _ := db.targets(t)
				k := &kernel{}
				f := newFixture(t, k, tg, options{checks: checks})
				runSQL(t, path, tt.change...)
				var edits []func(*receiptv1.Capability)
				if tt.edit != nil {
					edits = append(edits, tt.edit)
				}
				resp, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", toolCall("transfer", transferArgs), edits...), "idem-1"))
				checkOutcome(t, f, k, tg, resp, err, tt.want)
				if tt.want != nil && tt.logged != "" {
					refused := f.logs.FilterMessage("effect refused").All()
					if len(refused) != 1 || !strings.Contains(fmt.Sprint(refused[0].ContextMap()["error"]), tt.logged) {
						t.Errorf("refusal log lines %v, want one with %q", refused, tt.logged)
					}
				}
			})
		}
	}
}

// checkOutcome checks a transfer's execution: with want nil, one row
// written and one redemption; otherwise the refusal want, before anything
// was redeemed, written or started.
func checkOutcome(t *testing.T, f *fixture, k *kernel, tg targets, resp *actionv1.ExecuteResponse, err error, want *refusal) {
	t.Helper()
	rows := len(transfers(t, tg.targetDB()))
	redeemed, _ := k.counts()
	if want == nil {
		if err != nil || resp == nil || rows != 1 || redeemed != 1 {
			t.Fatalf("Execute = %v, %v; %d rows, redeemed %d; want an execution", resp, err, rows, redeemed)
		}
		return
	}
	if diff := cmp.Diff(*want, refusalOf(err)); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
	if _, started := f.entry(t, "idem-1"); resp != nil || rows != 0 || redeemed != 0 || started {
		t.Errorf("refused, yet response %v, %d rows, redeemed %d, key written %v", resp, rows, redeemed, started)
	}
}

// TestRetryNotRechecked: once the effect happened, a retry returns its
// receipt even though the record has changed since; a new capability
// decided on the old version is refused.
func TestRetryNotRechecked(t *testing.T) {
	path, checks := accountsDB(t)
	tg, _, _ := newTargets(t)
	f := newFixture(t, &kernel{}, tg, options{checks: checks})
	req := request(f.keys.capability(t, "idem-1", toolCall("transfer", transferArgs)), "idem-1")
	first, err := f.h.Execute(agentCtx(), req)
	if err != nil {
		t.Fatal(err)
	}
	runSQL(t, path, `UPDATE accounts SET row_version = 43`)
	again, err := f.h.Execute(agentCtx(), req)
	if err != nil {
		t.Fatalf("retry after the record changed = %v, want the first receipt", err)
	}
	if !again.GetRepeated() || !proto.Equal(again.GetSignedReceipt(), first.GetSignedReceipt()) {
		t.Error("retry did not return the first receipt")
	}
	other := request(f.keys.capability(t, "idem-2", toolCall("transfer", transferArgs)), "idem-2")
	if _, err := f.h.Execute(agentCtx(), other); refusalOf(err).Reason != errorv1.ErrorReason_ERROR_REASON_STATE_VERSION_CHANGED.String() {
		t.Errorf("new execution after the record changed = %v, want STATE_VERSION_CHANGED", err)
	}
}

// accountsServer is the accounts source's system of record behind a real
// MCP server on a loopback listener: get_account answers {account_id,
// owner, version} for a known account, null for an unknown one, and an
// error result while failing is set.
type accountsServer struct {
	url string
	srv *httptest.Server

	mu       sync.Mutex
	accounts map[string]int64 // account id → version
	failing  bool
}

type accountIn struct {
	AccountID string `json:"account_id"`
}

func newAccountsServer(t *testing.T) *accountsServer {
	t.Helper()
	a := &accountsServer{accounts: map[string]int64{"acct-7": 42}}
	s := mcp.NewServer(&mcp.Implementation{Name: "accounts", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_account"}, func(_ context.Context, _ *mcp.CallToolRequest, in accountIn) (*mcp.CallToolResult, any, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.failing {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ledger offline"}}}, nil, nil
		}
		v, ok := a.accounts[in.AccountID]
		if !ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "null"}}}, nil, nil
		}
		return nil, map[string]any{"account_id": in.AccountID, "owner": "employee-7", "version": v}, nil
	})
	a.srv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(a.srv.Close)
	a.url = a.srv.URL
	return a
}

func (a *accountsServer) set(edit func(a *accountsServer)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	edit(a)
}

// TestMCPStateCheck: a state check may read the record through a
// read-only tool of the source's MCP server, as the evidence adapter
// does; a first execution is refused when the record moved on, is gone,
// or cannot be read, and nothing is redeemed or executed.
func TestMCPStateCheck(t *testing.T) {
	reason := func(r errorv1.ErrorReason) string { return r.String() }
	unreadable := &refusal{codes.Unavailable, "record state unreadable: nothing was executed", reason(errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE)}
	tests := []struct {
		name   string
		change func(a *accountsServer)
		want   *refusal // nil: executed
	}{
		{name: "record unchanged"},
		{
			name:   "record written since the decision",
			change: func(a *accountsServer) { a.accounts["acct-7"] = 43 },
			want: &refusal{codes.FailedPrecondition, "record accounts_db/acct-7 changed since the decision (accounts-v42 → accounts-v43): nothing was executed",
				reason(errorv1.ErrorReason_ERROR_REASON_STATE_VERSION_CHANGED)},
		},
		{
			name:   "record gone",
			change: func(a *accountsServer) { delete(a.accounts, "acct-7") },
			want: &refusal{codes.FailedPrecondition, "record accounts_db/acct-7 is gone since the decision (accounts-v42): nothing was executed",
				reason(errorv1.ErrorReason_ERROR_REASON_STATE_VERSION_CHANGED)},
		},
		{name: "the tool answers an error", change: func(a *accountsServer) { a.failing = true }, want: unreadable},
		{name: "the server is down", change: func(a *accountsServer) { a.srv.Close() }, want: unreadable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAccountsServer(t)
			checks := map[string]action.StateCheckConfig{"accounts_db": {MCP: &action.MCPStateCheck{
				Server: mcpconn.Config{URL: a.url}, Tool: "get_account", KeyArgument: "account_id",
				StateVersion: `"accounts-v" + string(record.version)`,
			}}}
			tg, _, _ := newTargets(t)
			k := &kernel{}
			f := newFixture(t, k, tg, options{checks: checks})
			if tt.change != nil {
				if tt.name == "the server is down" {
					tt.change(a)
				} else {
					a.set(tt.change)
				}
			}
			resp, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", toolCall("transfer", transferArgs)), "idem-1"))
			checkOutcome(t, f, k, tg, resp, err, tt.want)
		})
	}
}
