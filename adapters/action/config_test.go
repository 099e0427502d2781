package action_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/adapters/action"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

func TestValidateExecute(t *testing.T) {
	capEnv := &receiptv1.Envelope{PayloadType: "ambit.receipt.v1.Capability"}
	tests := []struct {
		name string
		req  *actionv1.ExecuteRequest
		want []string // nil: valid
	}{
		{name: "valid", req: request(capEnv, "k")},
		{name: "nil request", req: nil, want: []string{"capability is required", "idempotency_key is required"}},
		{name: "no capability", req: request(nil, "k"), want: []string{"capability is required"}},
		{name: "no idempotency key", req: request(capEnv, ""), want: []string{"idempotency_key is required"}},
		{name: "key too long", req: request(capEnv, strings.Repeat("k", 129)), want: []string{"idempotency_key: 129 bytes, at most 128"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := action.ValidateExecute(tt.req)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateExecute = %v", err)
				}
				return
			}
			if !errors.Is(err, action.ErrInvalidRequest) {
				t.Fatalf("ValidateExecute = %v, want ErrInvalidRequest", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// exampleConfig is the configuration shape of the API brief: an sql, an
// http and an mcp executor and a state check.
const exampleConfig = `
identity: action
pki_dir: pki
listen: 127.0.0.1:7201
addr_file: action.addr
kernel: 127.0.0.1:7001
kernel_timeout: 1s
kernel_key: kernel
log_level: warn
shutdown_grace: 2s
reflection: true
record_sweep_interval: 250ms
database: action.db
durability: normal
state_checks:
  claims_db: {sql: {database: claims.db, table: claims, key: claim_id, state_version: '"claims-v" + string(record.row_version)', columns: [row_version]}}
executors:
  refund:
    sql:
      database: payments.db
      table: payments
      key_column: idempotency_key
      columns:
        payment_id: effect.id
        claim_id: args.claim_id
        payee_id: args.payee_id
        currency: args.amount.currency_code
        amount_minor: args.amount.minor_units
        destination: call.destination
  notify:
    http:
      url: "http://127.0.0.1:9001/hook"
      body: {}
      record_ref: result.id
      timeout: 2s
  issue_credit:
    mcp:
      server: {url: "http://127.0.0.1:9000/mcp"}
      tool: issue_credit
      arguments: {ticket_id: args.ticket_id, amount_minor: args.amount.minor_units, idempotency_key: effect.idempotency_key}
      record_ref: result.credit_id
`

func TestLoadConfig(t *testing.T) {
	write := func(t *testing.T, body string) string { return servicetest.WriteFile(t, "action.yaml", body) }
	got, err := action.LoadConfig(write(t, exampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := action.Config{
		Config: service.Config{
			Common: service.Common{Identity: "action", PKIDir: "pki", AddrFile: "action.addr", LogLevel: "warn", ShutdownGrace: config.Duration(2 * time.Second),
				Reflection: true, HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff, GCHeadroomMB: service.DefaultGCHeadroomMB},
			Listen: "127.0.0.1:7201", Kernel: "127.0.0.1:7001", KernelTimeout: config.Duration(time.Second),
		},
		KernelKey: "kernel", Database: "action.db", Durability: sqldb.DurabilityNormal, RecordSweepInterval: config.Duration(250 * time.Millisecond),
		StateChecks: map[string]action.StateCheckConfig{"claims_db": {SQL: &action.SQLStateCheck{
			Database: "claims.db", Table: "claims", Key: "claim_id", StateVersion: `"claims-v" + string(record.row_version)`, Columns: []string{"row_version"},
		}}},
		Executors: map[string]action.ExecutorConfig{
			"refund": {SQL: &action.SQLExecutor{Database: "payments.db", Table: "payments", KeyColumn: "idempotency_key", Columns: map[string]string{
				"payment_id": "effect.id", "claim_id": "args.claim_id", "payee_id": "args.payee_id", "currency": "args.amount.currency_code",
				"amount_minor": "args.amount.minor_units", "destination": "call.destination",
			}}},
			"notify": {HTTP: &action.HTTPExecutor{URL: "http://127.0.0.1:9001/hook", Body: map[string]string{}, RecordRef: "result.id", Timeout: config.Duration(2 * time.Second)}},
			"issue_credit": {MCP: &action.MCPExecutor{Server: mcpconn.Config{URL: "http://127.0.0.1:9000/mcp"}, Tool: "issue_credit", RecordRef: "result.credit_id",
				Arguments: map[string]string{"ticket_id": "args.ticket_id", "amount_minor": "args.amount.minor_units", "idempotency_key": "effect.idempotency_key"}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadConfig (-want +got):\n%s", diff)
	}
	minimal, err := action.LoadConfig(write(t, "pki_dir: p\nkernel: k\ndatabase: d\nexecutors: {notify: {http: {url: 'https://hooks.example/x'}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	wantMin := action.Config{
		Config: service.Config{
			Common: service.Common{Identity: "action", PKIDir: "p", ShutdownGrace: config.Duration(10 * time.Second),
				HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff, GCHeadroomMB: service.DefaultGCHeadroomMB},
			Listen: "127.0.0.1:0", Kernel: "k", KernelTimeout: config.Duration(3 * time.Second),
		},
		KernelKey: "kernel", Database: "d", Durability: sqldb.DurabilityFull, RecordSweepInterval: config.Duration(5 * time.Second),
		Executors: map[string]action.ExecutorConfig{"notify": {HTTP: &action.HTTPExecutor{URL: "https://hooks.example/x"}}},
	}
	if diff := cmp.Diff(wantMin, minimal); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestConfigErrors: a configuration that cannot work is refused at load,
// every problem named by its key path.
func TestConfigErrors(t *testing.T) {
	const base = "pki_dir: p\nkernel: k\ndatabase: d\n"
	sqlExec := func(extra string) string {
		return base + "executors:\n  t:\n    sql:\n      database: x.db\n      table: rows\n      key_column: k\n      columns: {a: args.a}\n" + extra
	}
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"unknown key":      {base + "executors: {t: {http: {url: 'http://h/'}}}\npayments_database: d\n", []string{"payments_database"}},
		"missing required": {"log_level: info\n", []string{"pki_dir", "kernel", "database is required", "executors: at least one executor is required"}},
		"durability":       {base + "durability: eventually\nexecutors: {t: {http: {url: 'http://h/'}}}\n", []string{`durability must be full or normal, got "eventually"`}},
		"executor for a tool twice": {base + "executors:\n  t: {http: {url: 'http://h/'}}\n  t: {http: {url: 'http://i/'}}\n",
			[]string{"line 6: executors.t: duplicate key (first at line 5)"}},
		"no connector":     {base + "executors: {t: {}}\n", []string{"executors.t: give exactly one executor: sql, http or mcp (0 given)"}},
		"two connectors":   {base + "executors: {t: {http: {url: 'http://h/'}, mcp: {server: {url: 'http://h/'}, tool: x}}}\n", []string{"executors.t: give exactly one executor: sql, http or mcp (2 given)"}},
		"bad tool name":    {base + "executors: {'a b': {http: {url: 'http://h/'}}}\n", []string{"executors.a b: a tool name has"}},
		"url not a url":    {base + "executors: {t: {http: {url: '%zz'}}}\n", []string{`executors.t.http.url: "%zz" is not a URL`}},
		"url not http":     {base + "executors: {t: {http: {url: 'ftp://h/x'}}}\n", []string{`executors.t.http.url: "ftp://h/x" is not an http or https URL`}},
		"url relative":     {base + "executors: {t: {http: {url: '/hook'}}}\n", []string{`executors.t.http.url: "/hook" is not an http or https URL`}},
		"url without host": {base + "executors: {t: {http: {url: 'http:///hook'}}}\n", []string{`executors.t.http.url: "http:///hook" names no host`}},
		"url with password": {base + "executors: {t: {http: {url: 'https://u:p@h/'}}}\n",
			[]string{"executors.t.http.url: a URL with credentials is refused"}},
		"url missing": {base + "executors: {t: {http: {}}}\n", []string{"executors.t.http.url: is required"}},
		"body does not compile": {base + "executors: {t: {http: {url: 'http://h/', body: {to: 'args.to +'}}}}\n",
			[]string{"executors.t.http.body.to: expression does not compile"}},
		"body reads the reply": {base + "executors: {t: {http: {url: 'http://h/', body: {to: 'result.id'}}}}\n",
			[]string{"executors.t.http.body.to: expression does not compile", "undeclared reference to 'result'"}},
		"record_ref does not compile": {base + "executors: {t: {http: {url: 'http://h/', record_ref: 'rows[0]'}}}\n",
			[]string{"executors.t.http.record_ref: expression does not compile"}},
		"sql column does not compile": {sqlExec("      record_ref: 'result.'\n"),
			[]string{"executors.t.sql.record_ref: expression does not compile"}},
		"sql mapping not a scalar": {base + "executors: {t: {sql: {database: x, table: rows, key_column: k, columns: {a: '[1]'}}}}\n",
			[]string{"executors.t.sql.columns.a: expression does not compile", "want a bool, number or string"}},
		"sql names": {base + "executors: {t: {sql: {table: 'rows; drop', key_column: '', columns: {'a-b': args.a, k: args.k}}}}\n",
			[]string{"executors.t.sql.database is required", `executors.t.sql.table: "rows; drop" is not a plain SQL identifier`,
				`executors.t.sql.key_column: "" is not a plain SQL identifier`, `executors.t.sql.columns.a-b: "a-b" is not a plain SQL identifier`}},
		"sql key column mapped": {base + "executors: {t: {sql: {database: x, table: rows, key_column: k, columns: {k: args.k}}}}\n",
			[]string{"executors.t.sql.columns.k: the key column receives the idempotency key"}},
		"sql without columns": {base + "executors: {t: {sql: {database: x, table: rows, key_column: k}}}\n",
			[]string{"executors.t.sql.columns: at least one column is required"}},
		"mcp": {base + "executors: {t: {mcp: {server: {url: 'http://h/', command: [x]}, arguments: {a: 'effect.'}}}}\n",
			[]string{"executors.t.mcp.server: give either command or url", "executors.t.mcp.tool is required", "executors.t.mcp.arguments.a: expression does not compile"}},
		"state check": {base + "executors: {t: {http: {url: 'http://h/'}}}\nstate_checks:\n  'a/b': {}\n  c: {sql: {table: t, key: k, state_version: 'record.', columns: [v, v]}}\n",
			[]string{"state_checks.a/b: a source name is not empty and has no '/'", "state_checks.a/b.sql or state_checks.a/b.mcp is required",
				"state_checks.c.sql.database is required", `state_checks.c.sql.columns[1]: "v" is repeated`, "state_checks.c.sql.state_version: expression does not compile"}},
		"mcp state check": {base + "executors: {t: {http: {url: 'http://h/'}}}\nstate_checks:\n  both: {sql: {table: t}, mcp: {tool: x}}\n  c: {mcp: {server: {url: 'ftp://h/'}, state_version: 'record.'}}\n",
			[]string{"state_checks.both: give exactly one of sql and mcp, not both", `state_checks.c.mcp.server: url "ftp://h/" is not http(s)`,
				"state_checks.c.mcp.tool is required", "state_checks.c.mcp.key_argument is required", "state_checks.c.mcp.state_version: expression does not compile"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := action.LoadConfig(servicetest.WriteFile(t, "action.yaml", tc.body))
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

// TestOpenChecksTheTargets: what only a database can tell (its tables,
// columns and unique keys) is checked when the executors and state checks
// are opened, every problem named by its key path.
func TestOpenChecksTheTargets(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) { testOpenChecksTheExecutors(t, db.empty(t)) })
	}
	testOpenChecksTheStateChecks(t)
}

func testOpenChecksTheExecutors(t *testing.T, target string) {
	// A row id the database assigns: SQLite's lone INTEGER PRIMARY KEY,
	// PostgreSQL's identity.
	rowID := "INTEGER PRIMARY KEY"
	if sqldb.IsPostgres(target) {
		rowID = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	runSQL(t, target,
		transfersSchema,
		`CREATE TABLE loose (id `+rowID+`, idempotency_key TEXT, account TEXT NOT NULL)`,
		`CREATE TABLE pair (a TEXT, b TEXT, account TEXT, UNIQUE (a, b))`,
		`CREATE TABLE partial (idempotency_key TEXT, account TEXT)`,
		`CREATE UNIQUE INDEX partial_key ON partial (idempotency_key) WHERE account IS NOT NULL`,
		`CREATE TABLE keyed (idempotency_key TEXT PRIMARY KEY, account TEXT NOT NULL DEFAULT '', note TEXT)`,
	)
	sqlExec := func(table, key string, cols map[string]string) action.ExecutorConfig {
		return action.ExecutorConfig{SQL: &action.SQLExecutor{Database: target, Table: table, KeyColumn: key, Columns: cols}}
	}
	for name, tc := range map[string]struct {
		cfg  action.ExecutorConfig
		want string // empty: opens
	}{
		"transfers":               {cfg: sqlExec("transfers", "idempotency_key", transferColumns())},
		"primary key as the key":  {cfg: sqlExec("keyed", "idempotency_key", map[string]string{"account": "args.account"})},
		"default covers not null": {cfg: sqlExec("keyed", "idempotency_key", map[string]string{"note": "args.note"})},
		"no such table":           {cfg: sqlExec("payouts", "idempotency_key", transferColumns()), want: `executors.t.sql.table: ` + target + ` has no table "payouts"`},
		"no such key column":      {cfg: sqlExec("transfers", "key", transferColumns()), want: `executors.t.sql.key_column: table "transfers" has no column "key"`},
		"no such column": {cfg: sqlExec("transfers", "idempotency_key", map[string]string{"transfer_id": "effect.id", "account": "args.account", "currency": "'GBP'",
			"amount_minor": "1", "destination": "call.destination", "amount": "1"}), want: `executors.t.sql.columns.amount: table "transfers" has no column "amount"`},
		"not null column unmapped": {cfg: sqlExec("transfers", "idempotency_key", map[string]string{"transfer_id": "effect.id"}),
			want: `executors.t.sql.columns: column "account" of table "transfers" is NOT NULL without a default and is not mapped`},
		"key not unique": {cfg: sqlExec("loose", "idempotency_key", map[string]string{"account": "args.account"}),
			want: `executors.t.sql.key_column: column "idempotency_key" of table "loose" is not UNIQUE on its own`},
		"key unique only with another column": {cfg: sqlExec("pair", "a", map[string]string{"account": "args.account"}),
			want: `executors.t.sql.key_column: column "a" of table "pair" is not UNIQUE on its own`},
		"key unique only partially": {cfg: sqlExec("partial", "idempotency_key", map[string]string{"account": "args.account"}),
			want: `executors.t.sql.key_column: column "idempotency_key" of table "partial" is not UNIQUE on its own`},
	} {
		t.Run(name, func(t *testing.T) {
			dbs := action.NewDatabases(sqldb.DurabilityFull)
			defer dbs.Close()
			executors, err := action.OpenExecutors(context.Background(), map[string]action.ExecutorConfig{"t": tc.cfg}, dbs, "action")
			if tc.want == "" {
				if err != nil || len(executors) != 1 {
					t.Fatalf("OpenExecutors = %v, %v", executors, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("OpenExecutors = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func testOpenChecksTheStateChecks(t *testing.T) {
	dir := t.TempDir()
	accounts := filepath.Join(dir, "accounts.db")
	runSQL(t, accounts, `CREATE TABLE accounts (account_id TEXT PRIMARY KEY, row_version INTEGER)`)
	check := func(db, table, key string, cols ...string) map[string]action.StateCheckConfig {
		return map[string]action.StateCheckConfig{"accounts_db": {SQL: &action.SQLStateCheck{
			Database: db, Table: table, Key: key, StateVersion: `"v" + string(record.row_version)`, Columns: cols}}}
	}
	missing := filepath.Join(dir, "missing.db")
	for name, tc := range map[string]struct {
		cfg  map[string]action.StateCheckConfig
		want []string
	}{
		"opens":          {cfg: check(accounts, "accounts", "account_id", "row_version")},
		"no such table":  {cfg: check(accounts, "ledgers", "account_id", "row_version"), want: []string{`state_checks.accounts_db.sql.table: ` + accounts + ` has no table "ledgers"`}},
		"no such column": {cfg: check(accounts, "accounts", "id", "row_version", "owner"), want: []string{`state_checks.accounts_db.sql.key: table "accounts" has no column "id"`, `state_checks.accounts_db.sql.columns[1]: table "accounts" has no column "owner"`}},
		"missing file":   {cfg: check(missing, "accounts", "account_id", "row_version"), want: []string{"state_checks.accounts_db.sql.database: " + missing + " cannot be read"}},
	} {
		t.Run("state check "+name, func(t *testing.T) {
			checks, err := action.OpenStateChecks(context.Background(), tc.cfg)
			if tc.want == nil {
				if err != nil || len(checks) != 1 {
					t.Fatalf("OpenStateChecks = %v, %v", checks, err)
				}
				_ = action.CloseStateChecks(checks)
				return
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("OpenStateChecks = %v, want an error naming %q", err, w)
				}
			}
		})
	}
	if matches, _ := filepath.Glob(missing + "*"); len(matches) != 0 {
		t.Errorf("a state check created %v", matches)
	}
}
