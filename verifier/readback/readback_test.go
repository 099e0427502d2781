package readback_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
	"github.com/ambitkernel/ambit/verifier/readback"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func open(t *testing.T, specs map[string]readback.Spec) *readback.Set {
	t.Helper()
	set, err := readback.Open(context.Background(), "readbacks", specs, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set.Close(); err != nil {
			t.Error(err)
		}
	})
	return set
}

func TestBind(t *testing.T) {
	capability := &receiptv1.Capability{
		CapabilityId: "cap-1", TaskId: "task-1", IdempotencyKey: "idem-1", Destination: "owner",
		StateVersion: "v7", Record: "things/T-1",
		Call: &contractv1.ToolCall{Tool: "move", ArgumentsJson: `{"n":12,"big":18446744073709551615,"x":1.5,"o":{"s":"t"},"l":[true,null]}`},
	}
	effect := &receiptv1.EffectReceipt{ReceiptId: "eff-1", RecordRef: "ref-1",
		// The receipt's own claims are not read: the capability binds.
		IdempotencyKey: "other", Call: &contractv1.ToolCall{Tool: "other", ArgumentsJson: `{}`}}
	in, err := readback.Bind(capability, effect)
	if err != nil {
		t.Fatal(err)
	}
	want := readback.Input{
		Key:  "idem-1",
		Args: map[string]any{"n": int64(12), "big": uint64(18446744073709551615), "x": 1.5, "o": map[string]any{"s": "t"}, "l": []any{true, nil}},
		Call: map[string]any{"tool": "move", "destination": "owner", "record": "things/T-1", "state_version": "v7"},
		Effect: map[string]any{"id": "eff-1", "idempotency_key": "idem-1", "capability_id": "cap-1", "task_id": "task-1",
			"record_ref": "ref-1"},
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("Bind (-want +got):\n%s", diff)
	}
	capability.Call.ArgumentsJson = `{"n":1,"n":2}`
	if _, err := readback.Bind(capability, effect); !errors.Is(err, readback.ErrArguments) {
		t.Errorf("Bind of duplicate keys = %v, want ErrArguments", err)
	}
}

func input(key string, args map[string]any) readback.Input {
	return readback.Input{Key: key, Args: args, Call: map[string]any{"tool": "pay"},
		Effect: map[string]any{"idempotency_key": key, "record_ref": "r-1"}}
}

func TestSQLReadAndCheck(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) { testSQLReadAndCheck(t, db.empty(t)) })
	}
}

func testSQLReadAndCheck(t *testing.T, path string) {
	rows := [][3]any{
		{"k-1", 5, "r-1"},
		{"k-2", 5, "r-2"}, {"k-2", 4, "r-3"},
	}
	// SQLite stores a value of another type than the column's as it is;
	// PostgreSQL refuses it.
	sqlite := !sqldb.IsPostgres(path)
	if sqlite {
		rows = append(rows, [3]any{"k-3", "five", nil})
	}
	db := writeEntriesIn(t, path, entriesSchema, rows...)
	spec := sqlSpec(db)
	spec.Checks = append(spec.Checks,
		readback.Check{Code: "REF_MISMATCH", Expression: "rows.all(r, r.b == effect.record_ref)"},
		readback.Check{Code: "NOT_ABOVE", Expression: "rows[0].a > args.limit"},
	)
	rb, ok := open(t, map[string]readback.Spec{"pay": spec}).Get("pay")
	if !ok {
		t.Fatal("no readback for pay")
	}
	tests := []struct {
		name     string
		key      string
		args     map[string]any
		rows     []map[string]any
		findings []string
	}{
		{name: "holds", key: "k-1", args: map[string]any{"a": int64(5), "limit": int64(1)},
			rows: []map[string]any{{"a": int64(5), "b": "r-1"}}},
		{name: "no row", key: "k-0", args: map[string]any{"a": int64(5), "limit": int64(1)},
			findings: []string{"NOT_ONE", "A_MISMATCH:unevaluable", "NOT_ABOVE:unevaluable"}},
		{name: "two rows in column order", key: "k-2", args: map[string]any{"a": int64(4), "limit": int64(1)},
			rows:     []map[string]any{{"a": int64(4), "b": "r-3"}, {"a": int64(5), "b": "r-2"}},
			findings: []string{"NOT_ONE", "REF_MISMATCH"}},
		{name: "a value of another type", key: "k-3", args: map[string]any{"a": int64(5), "limit": int64(1)},
			rows:     []map[string]any{{"a": "five", "b": nil}},
			findings: []string{"A_MISMATCH", "REF_MISMATCH", "NOT_ABOVE:unevaluable"}},
		{name: "an argument the call lacks", key: "k-1", args: map[string]any{"a": int64(5)},
			rows:     []map[string]any{{"a": int64(5), "b": "r-1"}},
			findings: []string{"NOT_ABOVE:unevaluable"}},
	}
	for _, tt := range tests {
		if tt.key == "k-3" && !sqlite {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.key, tt.args)
			rd, err := rb.Read(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.rows, rd.Rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			findings, causes := rb.Check(in, rd)
			if diff := cmp.Diff(tt.findings, findings); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if n := strings.Count(strings.Join(findings, " "), ":unevaluable"); len(causes) != n {
				t.Errorf("%d causes for %d unevaluable checks: %v", len(causes), n, causes)
			}
		})
	}
}

// TestSQLReadPostgresTypes: PostgreSQL's booleans, integers and text
// arrive as they are; its times, numerics and json as their text.
func TestSQLReadPostgresTypes(t *testing.T) {
	db := pgtest.Database(t)
	w, err := sqldb.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, stmt := range []string{
		`CREATE TABLE entries (k TEXT NOT NULL, n BIGINT, ok BOOLEAN, at TIMESTAMP, amount NUMERIC(10, 2), doc JSONB, b TEXT)`,
		`INSERT INTO entries VALUES ('k-1', 9007199254740993, true, '2026-03-02 10:30:00', 12.5, '{"x": 1}', 'r-1')`,
	} {
		if _, err := w.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	spec := sqlSpec(db)
	spec.SQL.Columns = []string{"n", "ok", "at", "amount", "doc", "b"}
	spec.Checks = []readback.Check{{Code: "NOT_PAID", Expression: `rows[0].ok && rows[0].amount == "12.50"`}}
	rb, _ := open(t, map[string]readback.Spec{"pay": spec}).Get("pay")
	in := input("k-1", nil)
	rd, err := rb.Read(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"n": int64(9007199254740993), "ok": true, "at": "2026-03-02 10:30:00", "amount": "12.50", "doc": `{"x": 1}`, "b": "r-1"}}
	if diff := cmp.Diff(want, rd.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if findings, causes := rb.Check(in, rd); len(findings) != 0 {
		t.Errorf("findings %v (%v), want none", findings, causes)
	}
}

func TestSQLReadRefusesAChangedTable(t *testing.T) {
	db := writeEntries(t, entriesSchema, [3]any{"k-1", 5, "r-1"})
	rb, _ := open(t, map[string]readback.Spec{"pay": sqlSpec(db)}).Get("pay")
	w, err := sqldb.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A column dropped after the start is an error, never its own name
	// read as a value.
	if _, err := w.Exec(`ALTER TABLE entries DROP COLUMN b`); err != nil {
		t.Fatal(err)
	}
	if rd, err := rb.Read(context.Background(), input("k-1", nil)); !errors.Is(err, readback.ErrUnreadable) {
		t.Errorf("Read after the column was dropped = %v, %v; want ErrUnreadable", rd, err)
	}
	if _, err := w.Exec(`DROP TABLE entries`); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.Read(context.Background(), input("k-1", nil)); !errors.Is(err, readback.ErrUnreadable) {
		t.Errorf("Read after the table was dropped = %v; want ErrUnreadable", err)
	}
}

func TestSQLRowsOverLimit(t *testing.T) {
	db := writeEntries(t, entriesSchema)
	w, err := sqldb.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i <= ?)
		INSERT INTO entries SELECT 'k-1', i, 'r' FROM n`, readback.MaxRows); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	rb, _ := open(t, map[string]readback.Spec{"pay": sqlSpec(db)}).Get("pay")
	rd, err := rb.Read(context.Background(), input("k-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.Rows) != readback.MaxRows || rd.Rows[0]["a"] != int64(1) {
		t.Errorf("read %d rows starting at %v, want %d from 1", len(rd.Rows), rd.Rows[0]["a"], readback.MaxRows)
	}
	findings, _ := rb.Check(input("k-1", map[string]any{"a": int64(1)}), rd)
	if diff := cmp.Diff([]string{readback.FindingRowsOverLimit, "NOT_ONE"}, findings); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// item is one record of the upstream server.
type item struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Amount int64  `json:"amount"`
}

type lookupIn struct {
	Key string `json:"key"`
}

type lookupOut struct {
	Items []item `json:"items"`
	Total int64  `json:"total"`
}

// upstream is a real MCP server on a loopback HTTP listener with a
// read-only tool, lookup, answering from items.
type upstream struct {
	URL   string
	mu    sync.Mutex
	items []item
	calls []lookupIn
}

func newUpstream(t *testing.T, items ...item) *upstream {
	t.Helper()
	u := &upstream{items: items}
	s := mcp.NewServer(&mcp.Implementation{Name: "records", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup"}, func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.calls = append(u.calls, in)
		if in.Key == "" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "key is required"}}}, lookupOut{}, nil
		}
		out := lookupOut{Items: []item{}}
		for _, it := range u.items {
			if it.Key == in.Key {
				out.Items = append(out.Items, it)
				out.Total += it.Amount
			}
		}
		return nil, out, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	u.URL = ts.URL
	return u
}

func TestMCPReadAndCheck(t *testing.T) {
	up := newUpstream(t, item{ID: "r-1", Key: "k-1", Amount: 1740}, item{ID: "r-2", Key: "k-2", Amount: 5}, item{ID: "r-3", Key: "k-2", Amount: 6})
	amount := readback.Check{Code: "AMOUNT_MISMATCH", Expression: "rows.all(r, r.amount == args.amount)"}
	withRows := func(rows string, args map[string]string) readback.Spec {
		s := mcpSpec(up.URL)
		s.MCP.Rows = rows
		if args != nil {
			s.MCP.Arguments = args
		}
		s.Checks = append(s.Checks, amount)
		return s
	}
	set := open(t, map[string]readback.Spec{
		"listed":   withRows("result.items", nil),
		"filtered": withRows("result.items.filter(i, i.id == effect.record_ref)", nil),
		"whole":    withRows("", nil),
		"bad_rows": withRows("result.entries", nil),
		"no_key":   withRows("result.items", map[string]string{"key": `""`}),
		"bad_arg":  withRows("result.items", map[string]string{"key": "args.missing"}),
	})
	tests := []struct {
		name, tool, key string
		rows            []map[string]any
		result          map[string]any
		findings        []string
		err             error
	}{
		{name: "one row", tool: "listed", key: "k-1",
			rows:   []map[string]any{{"id": "r-1", "key": "k-1", "amount": int64(1740)}},
			result: map[string]any{"items": []any{map[string]any{"id": "r-1", "key": "k-1", "amount": int64(1740)}}, "total": int64(1740)}},
		{name: "no row", tool: "listed", key: "k-9", result: map[string]any{"items": []any{}, "total": int64(0)},
			findings: []string{"NOT_ONE"}},
		{name: "two rows", tool: "listed", key: "k-2",
			rows:     []map[string]any{{"id": "r-2", "key": "k-2", "amount": int64(5)}, {"id": "r-3", "key": "k-2", "amount": int64(6)}},
			findings: []string{"NOT_ONE", "AMOUNT_MISMATCH"}},
		{name: "rows filtered by the effect", tool: "filtered", key: "k-2", findings: []string{"NOT_ONE"}},
		{name: "the result as the one row", tool: "whole", key: "k-1",
			rows: []map[string]any{{"items": []any{map[string]any{"id": "r-1", "key": "k-1", "amount": int64(1740)}}, "total": int64(1740)}},
			// amount is no field of the whole result.
			findings: []string{"AMOUNT_MISMATCH:unevaluable"}},
		{name: "rows not in the result", tool: "bad_rows", key: "k-1",
			findings: []string{readback.FindingRowsUnevaluable, "NOT_ONE"}},
		{name: "the upstream refuses", tool: "no_key", key: "k-1", err: readback.ErrUnreadable},
		{name: "an argument that does not map", tool: "bad_arg", key: "k-1", err: readback.ErrArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rb, ok := set.Get(tt.tool)
			if !ok {
				t.Fatalf("no readback %q", tt.tool)
			}
			in := input(tt.key, map[string]any{"amount": int64(1740)})
			in.Effect["record_ref"] = "r-1"
			rd, err := rb.Read(context.Background(), in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Read = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.rows, rd.Rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if tt.result != nil {
				if diff := cmp.Diff(tt.result, rd.Result); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
			}
			findings, _ := rb.Check(in, rd)
			if diff := cmp.Diff(tt.findings, findings); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	// Each read made one call with the mapped argument; the one whose
	// mapping failed made none.
	if got := fmt.Sprint(up.calls); got != "[{k-1} {k-9} {k-2} {k-2} {k-1} {k-1} {}]" {
		t.Errorf("upstream calls = %s", got)
	}
}
