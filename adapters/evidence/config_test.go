package evidence_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/adapters/evidence"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

func TestLoadConfig(t *testing.T) {
	const full = `
identity: evidence
pki_dir: /tmp/pki
listen: 127.0.0.1:7101
addr_file: /tmp/evidence.addr
kernel: 127.0.0.1:7001
kernel_timeout: 2s
log_level: debug
shutdown_grace: 5s
reflection: true
watch_interval: 250ms
sources:
  cases_db:
    provenance: PROVENANCE_TRUSTED
    sql:
      database: /tmp/records.db
      table: cases
      key: case_id
      subject: owner_id
      state_version: '"cases-v" + string(record.revision)'
      columns: [case_id, owner_id, total, revision]
  tickets:
    provenance: PROVENANCE_UNTRUSTED
    mcp:
      server: {url: "http://127.0.0.1:9000/mcp"}
      tool: get_ticket
      key_argument: ticket_id
      subject: customer_id
      state_version: '"ticket-v" + string(record.version)'
      columns: [ticket_id, customer_id, status, version]
  local:
    provenance: PROVENANCE_INSTRUCTION_BEARING
    mcp:
      server: {command: [ticket-server, --read-only]}
      tool: get_ticket
      key_argument: id
      subject: customer_id
      state_version: record.version
      columns: [customer_id, version]
`
	got, err := evidence.LoadConfig(servicetest.WriteFile(t, "evidence.yaml", full))
	if err != nil {
		t.Fatal(err)
	}
	want := evidence.Config{
		Config: service.Config{
			Common: service.Common{
				Identity: "evidence", PKIDir: "/tmp/pki", AddrFile: "/tmp/evidence.addr", LogLevel: "debug",
				ShutdownGrace: config.Duration(5 * time.Second), Reflection: true,
				HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff, GCHeadroomMB: service.DefaultGCHeadroomMB,
			},
			Listen: "127.0.0.1:7101", Kernel: "127.0.0.1:7001", KernelTimeout: config.Duration(2 * time.Second),
		},
		WatchInterval: config.Duration(250 * time.Millisecond),
		Sources: map[string]evidence.SourceConfig{
			"cases_db": {Provenance: "PROVENANCE_TRUSTED", SQL: &evidence.SQLSource{
				Database: "/tmp/records.db", Table: "cases", Key: "case_id", Subject: "owner_id",
				StateVersion: `"cases-v" + string(record.revision)`, Columns: []string{"case_id", "owner_id", "total", "revision"},
			}},
			"tickets": {Provenance: "PROVENANCE_UNTRUSTED", MCP: &evidence.MCPSource{
				Server: mcpconn.Config{URL: "http://127.0.0.1:9000/mcp"}, Tool: "get_ticket", KeyArgument: "ticket_id",
				Subject: "customer_id", StateVersion: `"ticket-v" + string(record.version)`,
				Columns: []string{"ticket_id", "customer_id", "status", "version"},
			}},
			"local": {Provenance: "PROVENANCE_INSTRUCTION_BEARING", MCP: &evidence.MCPSource{
				Server: mcpconn.Config{Command: []string{"ticket-server", "--read-only"}}, Tool: "get_ticket", KeyArgument: "id",
				Subject: "customer_id", StateVersion: `record.version`, Columns: []string{"customer_id", "version"},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadConfig (-want +got):\n%s", diff)
	}

	minimal, err := evidence.LoadConfig(servicetest.WriteFile(t, "evidence.yaml", `
pki_dir: pki
kernel: 127.0.0.1:7001
sources:
  s: {provenance: PROVENANCE_TRUSTED, sql: {database: d.db, table: t, key: k, subject: s, state_version: record.v, columns: [s, v]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if minimal.Identity != "evidence" || minimal.Listen != "127.0.0.1:0" || minimal.WatchInterval.D(0) != evidence.DefaultWatchInterval ||
		minimal.KernelTimeout.D(0) != 3*time.Second || minimal.ShutdownGrace.D(0) != 10*time.Second {
		t.Errorf("defaults not applied: %+v", minimal)
	}
}

// TestLoadConfigRefusals: every problem is reported at once, each naming
// its key path.
func TestLoadConfigRefusals(t *testing.T) {
	const head = "pki_dir: p\nkernel: k\n"
	sqlSource := func(fields string) string {
		return head + "sources:\n  cases_db:\n    provenance: PROVENANCE_TRUSTED\n    sql: {" + fields + "}\n"
	}
	const good = `database: d.db, table: cases, key: case_id, subject: owner_id, state_version: 'string(record.revision)', columns: [owner_id, revision]`
	tests := []struct {
		name, body string
		want       []string
	}{
		{"unknown key", head + "watch_intervall: 1s\n", []string{"line 3: watch_intervall: unknown key"}},
		{"unknown source key", head + "sources: {s: {provenance: PROVENANCE_TRUSTED, sql: {" + good + ", where: x}}}\n", []string{"line 3: sources.s.sql.where: unknown key"}},
		{"missing required", "sources: {}\n", []string{"pki_dir", "kernel", "sources: at least one source"}},
		{"watch interval too short", head + "watch_interval: 1ms\nsources: {s: {provenance: PROVENANCE_TRUSTED, sql: {" + good + "}}}\n",
			[]string{"watch_interval: 1ms is shorter than 10ms"}},
		{"unknown provenance", head + "sources: {s: {provenance: PROVENANCE_GOSPEL, sql: {" + good + "}}}\n",
			[]string{`sources.s.provenance: "PROVENANCE_GOSPEL"`}},
		{"unspecified provenance", head + "sources: {s: {provenance: PROVENANCE_UNSPECIFIED, sql: {" + good + "}}}\n",
			[]string{`sources.s.provenance: "PROVENANCE_UNSPECIFIED"`}},
		{"neither sql nor mcp", head + "sources: {s: {provenance: PROVENANCE_TRUSTED}}\n",
			[]string{"sources.s: one connector is required: sql or mcp"}},
		{"both sql and mcp", head + "sources: {s: {provenance: PROVENANCE_TRUSTED, sql: {" + good + "}, mcp: {tool: t}}}\n",
			[]string{"sources.s: give one connector, sql or mcp, not both"}},
		{"source name with a slash", head + "sources: {a/b: {provenance: PROVENANCE_TRUSTED, sql: {" + good + "}}}\n",
			[]string{"sources.a/b: a source name may not contain '/'"}},
		{"state version does not compile", sqlSource(`database: d.db, table: cases, key: case_id, subject: owner_id, state_version: '"v" +', columns: [owner_id]`),
			[]string{"sources.cases_db.sql.state_version:", "does not compile"}},
		{"state version reads an undeclared column", sqlSource(`database: d.db, table: cases, key: case_id, subject: owner_id, state_version: 'string(record.revision)', columns: [owner_id]`),
			[]string{`sources.cases_db.sql.state_version: "string(record.revision)" reads "revision", which is not a declared column`}},
		{"state version is not a scalar", sqlSource(`database: d.db, table: cases, key: case_id, subject: owner_id, state_version: '[1]', columns: [owner_id]`),
			[]string{"sources.cases_db.sql.state_version:", "want a bool, number or string"}},
		{"every sql problem", sqlSource(`table: "cases; DROP", key: "", subject: total, columns: [owner_id, "a b", owner_id]`),
			[]string{
				"sources.cases_db.sql.database is required",
				`sources.cases_db.sql.table: "cases; DROP" is not a plain SQL identifier`,
				`sources.cases_db.sql.key: "" is not a plain SQL identifier`,
				`sources.cases_db.sql.columns[1]: "a b" is not a plain SQL identifier`,
				`sources.cases_db.sql.columns[2]: "owner_id" is repeated`,
				`sources.cases_db.sql.subject: "total" is not one of the declared columns`,
				"sources.cases_db.sql.state_version is required",
			}},
		{"no columns", sqlSource(`database: d.db, table: cases, key: case_id, subject: owner_id, state_version: '"v"'`),
			[]string{"sources.cases_db.sql.columns: at least one column is required", `sources.cases_db.sql.subject: "owner_id" is not one of the declared columns`}},
		{"every mcp problem", head + "sources: {t: {provenance: PROVENANCE_TRUSTED, mcp: {server: {url: ftp://x}, subject: s, state_version: 'record.v', columns: [s, '']}}}\n",
			[]string{
				`sources.t.mcp.server: url "ftp://x" is not http(s)`,
				"sources.t.mcp.tool is required",
				"sources.t.mcp.key_argument is required",
				"sources.t.mcp.columns[1]: empty field name",
				`sources.t.mcp.state_version: "record.v" reads "v", which is not a declared column`,
			}},
		{"mcp server missing", head + "sources: {t: {provenance: PROVENANCE_TRUSTED, mcp: {tool: x, key_argument: id, subject: s, state_version: record.s, columns: [s]}}}\n",
			[]string{"sources.t.mcp.server: command or url is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := evidence.LoadConfig(servicetest.WriteFile(t, "evidence.yaml", tt.body))
			if err == nil {
				t.Fatal("LoadConfig succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestOpenSourcesRefusals: what only the source can tell is checked when
// it is opened, each problem naming its key path, and nothing is left
// open or created.
func TestOpenSourcesRefusals(t *testing.T) {
	dbPath, _ := database(t)
	sqlWith := func(edit func(*evidence.SQLSource)) map[string]evidence.SourceConfig {
		cfgs := sqlSources(dbPath)
		s := *cfgs["cases_db"].SQL
		s.Columns = append([]string(nil), s.Columns...)
		edit(&s)
		cfgs["cases_db"] = evidence.SourceConfig{Provenance: "PROVENANCE_TRUSTED", SQL: &s}
		return cfgs
	}
	missing := filepath.Join(t.TempDir(), "missing.db")
	tests := []struct {
		name string
		cfgs map[string]evidence.SourceConfig
		want []string
	}{
		{"unknown column", sqlWith(func(s *evidence.SQLSource) { s.Columns = append(s.Columns, "shoe_size", "salary") }),
			[]string{`sources.cases_db.sql.columns[7]: table "cases" has no column "shoe_size"`, `sources.cases_db.sql.columns[8]: table "cases" has no column "salary"`}},
		{"unknown key column", sqlWith(func(s *evidence.SQLSource) { s.Key = "case_number" }),
			[]string{`sources.cases_db.sql.key: table "cases" has no column "case_number"`}},
		{"unknown table", sqlWith(func(s *evidence.SQLSource) { s.Table = "claims" }),
			[]string{`sources.cases_db.sql.table:`, `has no table "claims"`}},
		{"missing database", sqlWith(func(s *evidence.SQLSource) { s.Database = missing }),
			[]string{"sources.cases_db.sql.database:", "cannot be read"}},
		{"unsupported database", sqlWith(func(s *evidence.SQLSource) { s.Database = "mysql://u:secret@h/db" }),
			[]string{"sources.cases_db.sql.database: unsupported database"}},
		{"unreachable server", sqlWith(func(s *evidence.SQLSource) { s.Database = "postgres://u:secret@" + servicetest.DeadAddr(t) + "/db" }),
			[]string{"sources.cases_db.sql.database: postgres://u:xxxxx@", "cannot be read"}},
		{"mcp server down", map[string]evidence.SourceConfig{"tickets": ticketSource("http://" + servicetest.DeadAddr(t) + "/mcp")},
			[]string{"sources.tickets.mcp.server: connect to mcp server"}},
		{"bad config is refused here too", map[string]evidence.SourceConfig{"s": {Provenance: "PROVENANCE_TRUSTED"}},
			[]string{"sources.s: one connector is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sources, err := evidence.OpenSources(context.Background(), tt.cfgs)
			if err == nil {
				evidence.CloseSources(sources)
				t.Fatal("OpenSources succeeded")
			}
			if sources != nil {
				t.Errorf("OpenSources returned sources with error %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q carries a password", err)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Error("the read-only adapter created the missing database")
	}
}
