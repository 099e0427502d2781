package readback_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
	"github.com/ambitkernel/ambit/verifier/readback"
)

// sqlSpec is a valid SQL declaration over the table entries(k, a, b).
func sqlSpec(database string) readback.Spec {
	return readback.Spec{
		SQL: &readback.SQL{Database: database, Table: "entries", KeyColumn: "k", Columns: []string{"a", "b"}},
		Checks: []readback.Check{
			{Code: "NOT_ONE", Expression: "size(rows) == 1"},
			{Code: "A_MISMATCH", Expression: "rows[0].a == args.a"},
		},
	}
}

// mcpSpec is a valid MCP declaration.
func mcpSpec(url string) readback.Spec {
	return readback.Spec{
		MCP: &readback.MCP{
			Server:    mcpconn.Config{URL: url},
			Tool:      "lookup",
			Arguments: map[string]string{"key": "effect.idempotency_key"},
			Rows:      "result.items",
		},
		Checks: []readback.Check{{Code: "NOT_ONE", Expression: "size(rows) == 1"}},
	}
}

func TestValidate(t *testing.T) {
	with := func(s readback.Spec, edit func(*readback.Spec)) readback.Spec {
		// Copy the connectors so that cases do not share them.
		if s.SQL != nil {
			c := *s.SQL
			s.SQL = &c
		}
		if s.MCP != nil {
			c := *s.MCP
			s.MCP = &c
		}
		edit(&s)
		return s
	}
	good := sqlSpec("x.db")
	goodMCP := mcpSpec("http://127.0.0.1:1/mcp")
	tests := []struct {
		name  string
		specs map[string]readback.Spec
		want  []string // each must appear in the error; none: valid
	}{
		{name: "sql", specs: map[string]readback.Spec{"pay": good}},
		{name: "mcp", specs: map[string]readback.Spec{"credit": goodMCP}},
		{name: "mcp over stdio without arguments or rows", specs: map[string]readback.Spec{"credit": with(goodMCP, func(s *readback.Spec) {
			s.MCP.Server = mcpconn.Config{Command: []string{"server", "--read-only"}}
			s.MCP.Arguments, s.MCP.Rows = nil, ""
		})}},
		{name: "no readbacks", specs: nil, want: []string{"readbacks: at least one readback is required"}},
		{name: "neither connector", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) { s.SQL = nil })},
			want: []string{"readbacks.pay: declare one connector: sql or mcp"}},
		{name: "both connectors", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) { s.MCP = goodMCP.MCP })},
			want: []string{"readbacks.pay: declare one connector, not both sql and mcp"}},
		{name: "bad tool name", specs: map[string]readback.Spec{"pay me": good}, want: []string{"readbacks.pay me: the tool name"}},
		{name: "no checks", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) { s.Checks = nil })},
			want: []string{"readbacks.pay.checks: at least one check is required"}},
		{name: "duplicate codes", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) {
			s.Checks = append(s.Checks, readback.Check{Code: "NOT_ONE", Expression: "true"})
		})}, want: []string{`readbacks.pay.checks[2].code: "NOT_ONE" is declared twice`}},
		{name: "code not upper case", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) {
			s.Checks = []readback.Check{{Code: "not-one", Expression: "true"}}
		})}, want: []string{`readbacks.pay.checks[0].code: "not-one" is not an upper-case code`}},
		{name: "check does not compile", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) {
			s.Checks = []readback.Check{{Code: "X", Expression: "size(rows) =="}}
		})}, want: []string{"readbacks.pay.checks[0].expression: expression does not compile"}},
		{name: "check reads an unknown variable", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) {
			s.Checks = []readback.Check{{Code: "X", Expression: "record.a == 1"}}
		})}, want: []string{"readbacks.pay.checks[0].expression", "undeclared reference to 'record'"}},
		{name: "check is not a condition", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) {
			s.Checks = []readback.Check{{Code: "X", Expression: "size(rows)"}}
		})}, want: []string{"readbacks.pay.checks[0].expression", "want bool"}},
		{name: "sql names", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) {
			s.SQL.Database, s.SQL.Table, s.SQL.KeyColumn, s.SQL.Columns = "", "entries; DROP", "", []string{"a", "a", `b"`}
		})}, want: []string{
			"readbacks.pay.sql.database: is required",
			`readbacks.pay.sql.table: "entries; DROP" is not a plain SQL identifier`,
			`readbacks.pay.sql.key_column: "" is not a plain SQL identifier`,
			`readbacks.pay.sql.columns[1]: "a" is declared twice`,
			`readbacks.pay.sql.columns[2]: "b\"" is not a plain SQL identifier`,
		}},
		{name: "sql without columns", specs: map[string]readback.Spec{"pay": with(good, func(s *readback.Spec) { s.SQL.Columns = nil })},
			want: []string{"readbacks.pay.sql.columns: at least one column is required"}},
		{name: "mcp server and tool", specs: map[string]readback.Spec{"credit": with(goodMCP, func(s *readback.Spec) {
			s.MCP.Server = mcpconn.Config{URL: "http://x", Command: []string{"x"}}
			s.MCP.Tool = ""
		})}, want: []string{"readbacks.credit.mcp.server: give either command or url, not both", "readbacks.credit.mcp.tool: is required"}},
		{name: "mcp argument reads what is read", specs: map[string]readback.Spec{"credit": with(goodMCP, func(s *readback.Spec) {
			s.MCP.Arguments = map[string]string{"key": "result.key", "n": "args.n"}
		})}, want: []string{"readbacks.credit.mcp.arguments.key", "undeclared reference to 'result'"}},
		{name: "mcp rows not a list", specs: map[string]readback.Spec{"credit": with(goodMCP, func(s *readback.Spec) { s.MCP.Rows = "size(result)" })},
			want: []string{"readbacks.credit.mcp.rows", "want a list"}},
		{name: "every problem of every readback", specs: map[string]readback.Spec{
			"a": with(good, func(s *readback.Spec) { s.Checks = nil }),
			"b": with(goodMCP, func(s *readback.Spec) { s.MCP.Tool = "" }),
		}, want: []string{"readbacks.a.checks: at least one", "readbacks.b.mcp.tool: is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := readback.Validate("readbacks", tt.specs)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted the declaration")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// writeEntries creates a database with the table entries(k, a, b) and
// returns its path.
func writeEntries(t *testing.T, schema string, rows ...[3]any) string {
	t.Helper()
	return writeEntriesIn(t, filepath.Join(t.TempDir(), "entries.db"), schema, rows...)
}

// writeEntriesIn is writeEntries in the empty database path.
func writeEntriesIn(t *testing.T, path, schema string, rows ...[3]any) string {
	t.Helper()
	db, err := sqldb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(schema); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO entries (k, a, b) VALUES (?, ?, ?)`, r[0], r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

const entriesSchema = `CREATE TABLE entries (k TEXT NOT NULL, a INTEGER, b TEXT)`

// databases are the databases a readback reads: a test of the reads runs
// on each (PostgreSQL is skipped without a server, see pgtest).
var databases = []struct {
	name  string
	empty func(testing.TB) string
}{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "entries.db") }},
	{"postgres", pgtest.Database},
}

func TestOpenChecksWhatItOpens(t *testing.T) {
	db := writeEntries(t, entriesSchema)
	tests := []struct {
		name string
		spec readback.Spec
		want []string
	}{
		{name: "missing database", spec: sqlSpec(filepath.Join(t.TempDir(), "none.db")), want: []string{"readbacks.pay.sql.database: read the schema of"}},
		{name: "unknown table", spec: func() readback.Spec {
			s := sqlSpec(db)
			s.SQL.Table = "entry"
			return s
		}(), want: []string{`readbacks.pay.sql.table: no table "entry" in ` + db}},
		{name: "unknown columns", spec: func() readback.Spec {
			s := sqlSpec(db)
			s.SQL.KeyColumn, s.SQL.Columns = "key", []string{"a", "c", "b"}
			return s
		}(), want: []string{`readbacks.pay.sql.key_column: no column "key" in table "entries"`, `readbacks.pay.sql.columns[1]: no column "c" in table "entries"`}},
		{name: "unreachable mcp server", spec: mcpSpec("http://" + deadAddr(t) + "/mcp"), want: []string{"readbacks.pay.mcp.server: connect to mcp server"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := readback.Open(context.Background(), "readbacks", map[string]readback.Spec{"pay": tt.spec}, "test")
			if err == nil {
				_ = set.Close()
				t.Fatal("Open succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
