package examples_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples"
	"github.com/ambitkernel/ambit/kernel/contract"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/document"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/google/go-cmp/cmp"
)

// The configuration sections in their documented shapes. Decoding is
// strict (package document), so a key outside these shapes fails the
// test.
type (
	evidenceConfig struct {
		Sources map[string]evidenceSource `json:"sources"`
	}
	evidenceSource struct {
		Provenance string     `json:"provenance"`
		SQL        *sqlSource `json:"sql"`
		MCP        *mcpSource `json:"mcp"`
	}
	sqlSource struct {
		Database     string   `json:"database"`
		Table        string   `json:"table"`
		Key          string   `json:"key"`
		Subject      string   `json:"subject"`
		StateVersion string   `json:"state_version"`
		Columns      []string `json:"columns"`
	}
	mcpSource struct {
		Server       mcpconn.Config `json:"server"`
		Tool         string         `json:"tool"`
		KeyArgument  string         `json:"key_argument"`
		Subject      string         `json:"subject"`
		StateVersion string         `json:"state_version"`
		Columns      []string       `json:"columns"`
	}

	actionConfig struct {
		Database    string                `json:"database"`
		StateChecks map[string]stateCheck `json:"state_checks"`
		Executors   map[string]executor   `json:"executors"`
	}
	stateCheck struct {
		SQL *struct {
			Database     string   `json:"database"`
			Table        string   `json:"table"`
			Key          string   `json:"key"`
			StateVersion string   `json:"state_version"`
			Columns      []string `json:"columns"`
		} `json:"sql"`
		MCP *struct {
			Server       mcpconn.Config `json:"server"`
			Tool         string         `json:"tool"`
			KeyArgument  string         `json:"key_argument"`
			StateVersion string         `json:"state_version"`
		} `json:"mcp"`
	}
	executor struct {
		SQL *struct {
			Database  string            `json:"database"`
			Table     string            `json:"table"`
			KeyColumn string            `json:"key_column"`
			Columns   map[string]string `json:"columns"`
		} `json:"sql"`
		HTTP *struct {
			URL       string            `json:"url"`
			Body      map[string]string `json:"body"`
			RecordRef string            `json:"record_ref"`
		} `json:"http"`
		MCP *struct {
			Server    mcpconn.Config    `json:"server"`
			Tool      string            `json:"tool"`
			Arguments map[string]string `json:"arguments"`
			RecordRef string            `json:"record_ref"`
		} `json:"mcp"`
	}

	verifierConfig struct {
		Readbacks map[string]readback `json:"readbacks"`
	}
	readback struct {
		SQL *struct {
			Database  string   `json:"database"`
			Table     string   `json:"table"`
			KeyColumn string   `json:"key_column"`
			Columns   []string `json:"columns"`
		} `json:"sql"`
		MCP *struct {
			Server    mcpconn.Config    `json:"server"`
			Tool      string            `json:"tool"`
			Arguments map[string]string `json:"arguments"`
			Rows      string            `json:"rows"`
		} `json:"mcp"`
		Checks []struct {
			Code       string `json:"code"`
			Expression string `json:"expression"`
		} `json:"checks"`
	}
)

// domain is one example's declarations, loaded and expanded.
type domain struct {
	name     string
	contract *contractv1.Contract
	evidence evidenceConfig
	action   actionConfig
	verifier verifierConfig
}

// bound is a contract template with its binding filled in, as whoever
// binds a task does it.
func bound(t *testing.T, name, taskID, recordKey string, validUntil time.Time) []byte {
	t.Helper()
	tmpl, err := examples.File(name, examples.ContractFile)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Replace(tmpl, []byte("task_id: TEMPLATE"), []byte("task_id: "+taskID), 1)
	out = bytes.Replace(out, []byte("key: TEMPLATE"), []byte("key: "+recordKey), 1)
	valid := regexp.MustCompile(`(?m)^  valid_until: .*$`)
	out = valid.ReplaceAll(out, []byte(`  valid_until: "`+validUntil.UTC().Format(time.RFC3339)+`"`))
	if bytes.Contains(out, []byte("TEMPLATE")) {
		t.Fatalf("%s: a TEMPLATE value is left after binding", name)
	}
	return out
}

func load(t *testing.T, name, recordKey string, vars map[string]string) *domain {
	t.Helper()
	d := &domain{name: name}
	c, err := contract.Parse(name+"/contract.yaml", bound(t, name, "task-1", recordKey, time.Now().Add(4*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	d.contract = c
	for file, into := range map[string]any{examples.EvidenceFile: &d.evidence, examples.ActionFile: &d.action, examples.VerifierFile: &d.verifier} {
		data, err := examples.Expand(name, file, vars)
		if err != nil {
			t.Fatal(err)
		}
		// The processes read their configuration this strictly too.
		if err := document.Decode(data, into); err != nil {
			t.Fatalf("%s/%s: %v", name, file, err)
		}
	}
	return d
}

// testVars are placeholder values for checks that reach no process.
var testVars = map[string]string{examples.Data: "/tmp/ambit-data", examples.SupportdeskURL: "http://127.0.0.1:9/mcp"}

func TestContractTemplates(t *testing.T) {
	tests := []struct {
		domain, record string
		subject        string
		tools, sources []string
	}{
		{examples.ExpenseRefund, "C-1001", "employee-7", []string{"refund"}, []string{"claims_db", "receipt_upload"}},
		{examples.Supportdesk, "T-501", "cust-42", []string{"reply_to_customer", "issue_credit", "close_ticket"}, []string{"tickets", "messages"}},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			tmpl, err := examples.File(tt.domain, examples.ContractFile)
			if err != nil {
				t.Fatal(err)
			}
			// The template itself parses, so a binder may also parse it and
			// set the binding on the message.
			if _, err := contract.Parse("template", tmpl); err != nil {
				t.Fatalf("template: %v", err)
			}
			if n := bytes.Count(tmpl, []byte("TEMPLATE")); n != 2 {
				t.Errorf("template has %d TEMPLATE values, want 2 (task_id and record key)", n)
			}
			until := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
			c, err := contract.Parse("bound", bound(t, tt.domain, "task-9", tt.record, until))
			if err != nil {
				t.Fatal(err)
			}
			compiled, err := contract.Compile(c)
			if err != nil {
				t.Fatal(err)
			}
			b := c.GetBinding()
			if b.GetTaskId() != "task-9" || b.GetRecord().GetKey() != tt.record || !b.GetValidUntil().AsTime().Equal(until) || b.GetSubject() != tt.subject {
				t.Errorf("binding = %v", b)
			}
			var tools, sources []string
			for _, g := range c.GetAction().GetTools() {
				tools = append(tools, g.GetName())
				if compiled.Tools[g.GetName()] == nil {
					t.Errorf("tool %s did not compile", g.GetName())
				}
			}
			for _, s := range c.GetEvidence().GetSources() {
				sources = append(sources, s.GetName())
			}
			if diff := cmp.Diff(tt.tools, tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.sources, sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlaceholders pins which placeholders each file uses, and that a
// missing value is an error naming it.
func TestPlaceholders(t *testing.T) {
	want := map[string][]string{
		"expense-refund/evidence.yaml": {"DATA"},
		"expense-refund/action.yaml":   {"DATA"},
		"expense-refund/verifier.yaml": {"DATA"},
		"supportdesk/evidence.yaml":    {"SUPPORTDESK_URL"},
		"supportdesk/action.yaml":      {"DATA", "SUPPORTDESK_URL"},
		"supportdesk/verifier.yaml":    {"SUPPORTDESK_URL"},
	}
	for _, d := range examples.Domains() {
		for _, f := range []string{examples.ContractFile, examples.EvidenceFile, examples.ActionFile, examples.VerifierFile} {
			data, err := examples.File(d, f)
			if err != nil {
				t.Fatal(err)
			}
			var used []string
			os.Expand(string(data), func(k string) string {
				if !slices.Contains(used, k) {
					used = append(used, k)
				}
				return ""
			})
			slices.Sort(used)
			if diff := cmp.Diff(want[d+"/"+f], used); diff != "" {
				t.Errorf("%s/%s placeholders (-want +got):\n%s", d, f, diff)
			}
			for _, k := range used {
				vars := map[string]string{examples.Data: "/d", examples.SupportdeskURL: "http://127.0.0.1:1/mcp"}
				delete(vars, k)
				if _, err := examples.Expand(d, f, vars); err == nil || !strings.Contains(err.Error(), "${"+k+"}") {
					t.Errorf("%s/%s without %s: %v, want an error naming it", d, f, k, err)
				}
			}
		}
	}
	if _, err := examples.Expand(examples.ExpenseRefund, examples.EvidenceFile, map[string]string{examples.Data: `/tmp/a"b`}); err == nil {
		t.Error("a value with a quote was expanded")
	}
	if _, err := examples.File("payroll", examples.ContractFile); err == nil {
		t.Error("an unknown domain was found")
	}
}

var (
	recordEnv   = expr.MustEnv(expr.Record)
	readbackEnv = expr.MustEnv(expr.Readback)
	mappingEnv  = expr.MustEnv(expr.Variables{Maps: []string{"args", "call", "effect"}})
	resultEnv   = expr.MustEnv(expr.Variables{Maps: []string{"result"}})
)

func compile(t *testing.T, where string, env *expr.Env, src string, want expr.Result) *expr.Program {
	t.Helper()
	p, err := env.Compile(src, want)
	if err != nil {
		t.Errorf("%s: %v", where, err)
	}
	return p
}

func ident(t *testing.T, where string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := sqldb.CheckIdent(n); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
}

func server(t *testing.T, where string, c mcpconn.Config) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Errorf("%s.server: %v", where, err)
	}
}

// TestConfigSections checks every declaration of every configuration
// file: one connector each, plain SQL names, a valid server, and every
// expression compiling in its environment.
func TestConfigSections(t *testing.T) {
	for _, name := range examples.Domains() {
		t.Run(name, func(t *testing.T) {
			d := load(t, name, "K-1", testVars)
			if len(d.evidence.Sources) == 0 || len(d.action.Executors) == 0 || len(d.verifier.Readbacks) == 0 || d.action.Database == "" {
				t.Fatal("a section is empty")
			}
			for n, s := range d.evidence.Sources {
				at := "sources." + n
				if _, ok := contractv1.Provenance_value[s.Provenance]; !ok || s.Provenance == "PROVENANCE_UNSPECIFIED" {
					t.Errorf("%s.provenance: %q", at, s.Provenance)
				}
				switch {
				case (s.SQL == nil) == (s.MCP == nil):
					t.Errorf("%s: want exactly one of sql and mcp", at)
				case s.SQL != nil:
					ident(t, at+".sql", append([]string{s.SQL.Table, s.SQL.Key, s.SQL.Subject}, s.SQL.Columns...)...)
					compile(t, at+".sql.state_version", recordEnv, s.SQL.StateVersion, expr.Scalar)
					if !slices.Contains(s.SQL.Columns, s.SQL.Subject) || !slices.Contains(s.SQL.Columns, s.SQL.Key) {
						t.Errorf("%s.sql: key and subject must be declared columns", at)
					}
				default:
					server(t, at+".mcp", s.MCP.Server)
					compile(t, at+".mcp.state_version", recordEnv, s.MCP.StateVersion, expr.Scalar)
					if s.MCP.Tool == "" || !slices.Contains(s.MCP.Columns, s.MCP.Subject) || !slices.Contains(s.MCP.Columns, s.MCP.KeyArgument) {
						t.Errorf("%s.mcp: a tool, and key_argument and subject among the columns, are required", at)
					}
				}
			}
			for n, s := range d.action.StateChecks {
				at := "state_checks." + n
				switch {
				case (s.SQL == nil) == (s.MCP == nil):
					t.Errorf("%s: want exactly one of sql and mcp", at)
				case s.SQL != nil:
					ident(t, at+".sql", append([]string{s.SQL.Table, s.SQL.Key}, s.SQL.Columns...)...)
					compile(t, at+".sql.state_version", recordEnv, s.SQL.StateVersion, expr.Scalar)
				default:
					server(t, at+".mcp", s.MCP.Server)
					compile(t, at+".mcp.state_version", recordEnv, s.MCP.StateVersion, expr.Scalar)
					// The check reads the source as the evidence adapter does:
					// the same tool, key and state version.
					src := d.evidence.Sources[n].MCP
					if src == nil || src.Tool != s.MCP.Tool || src.KeyArgument != s.MCP.KeyArgument || src.StateVersion != s.MCP.StateVersion {
						t.Errorf("%s.mcp: does not read source %s as the evidence adapter does", at, n)
					}
				}
			}
			for n, e := range d.action.Executors {
				at := "executors." + n
				count := 0
				if e.SQL != nil {
					count++
					ident(t, at+".sql", e.SQL.Table, e.SQL.KeyColumn)
					for col, src := range e.SQL.Columns {
						ident(t, at+".sql.columns", col)
						compile(t, at+".sql.columns."+col, mappingEnv, src, expr.Scalar)
					}
				}
				if e.HTTP != nil {
					count++
				}
				if e.MCP != nil {
					count++
					server(t, at+".mcp", e.MCP.Server)
					for arg, src := range e.MCP.Arguments {
						compile(t, at+".mcp.arguments."+arg, mappingEnv, src, expr.Scalar)
					}
					if e.MCP.RecordRef != "" {
						compile(t, at+".mcp.record_ref", resultEnv, e.MCP.RecordRef, expr.Scalar)
					}
				}
				if count != 1 {
					t.Errorf("%s: %d connectors, want one", at, count)
				}
			}
			for n, r := range d.verifier.Readbacks {
				at := "readbacks." + n
				switch {
				case (r.SQL == nil) == (r.MCP == nil):
					t.Errorf("%s: want exactly one of sql and mcp", at)
				case r.SQL != nil:
					ident(t, at+".sql", append([]string{r.SQL.Table, r.SQL.KeyColumn}, r.SQL.Columns...)...)
				default:
					server(t, at+".mcp", r.MCP.Server)
					for arg, src := range r.MCP.Arguments {
						compile(t, at+".mcp.arguments."+arg, mappingEnv, src, expr.Scalar)
					}
					if r.MCP.Rows != "" {
						// rows must be a list: size() type-checks only on one.
						compile(t, at+".mcp.rows", readbackEnv, "size("+r.MCP.Rows+") >= 0", expr.Bool)
					}
				}
				if len(r.Checks) == 0 {
					t.Errorf("%s: no checks", at)
				}
				codes := map[string]bool{}
				for i, c := range r.Checks {
					if !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(c.Code) || codes[c.Code] {
						t.Errorf("%s.checks[%d].code: %q is not a new upper-case code", at, i, c.Code)
					}
					codes[c.Code] = true
					compile(t, fmt.Sprintf("%s.checks[%d].expression", at, i), readbackEnv, c.Expression, expr.Bool)
				}
			}
		})
	}
}

// TestDeclarationsAgree checks that the four files describe one domain:
// every granted source is declared with the columns its grant releases,
// every granted tool has an executor and a readback, and nothing is
// declared for a tool or source the contract does not name.
func TestDeclarationsAgree(t *testing.T) {
	for _, name := range examples.Domains() {
		t.Run(name, func(t *testing.T) {
			d := load(t, name, "K-1", testVars)
			var sources, tools []string
			for _, s := range d.contract.GetEvidence().GetSources() {
				sources = append(sources, s.GetName())
				decl, ok := d.evidence.Sources[s.GetName()]
				if !ok {
					t.Errorf("source %s is granted but not declared", s.GetName())
					continue
				}
				if decl.Provenance != s.GetProvenance().String() {
					t.Errorf("source %s: declared %s, granted %s", s.GetName(), decl.Provenance, s.GetProvenance())
				}
				columns := decl.MCP.columns(decl.SQL)
				need := append(slices.Clone(s.GetFields()), s.GetQuarantined()...)
				if f := s.GetRecordField(); f != "" {
					need = append(need, f)
				}
				for _, f := range need {
					if !slices.Contains(columns, f) {
						t.Errorf("source %s: field %q is granted but not a declared column", s.GetName(), f)
					}
				}
			}
			if r := d.contract.GetBinding().GetRecord(); r != nil && !slices.Contains(sources, r.GetSource()) {
				t.Errorf("the bound record's source %s is not granted", r.GetSource())
			}
			for _, g := range d.contract.GetAction().GetTools() {
				tools = append(tools, g.GetName())
				if _, ok := d.action.Executors[g.GetName()]; !ok {
					t.Errorf("tool %s has no executor", g.GetName())
				}
				if _, ok := d.verifier.Readbacks[g.GetName()]; !ok {
					t.Errorf("tool %s has no readback", g.GetName())
				}
			}
			for n := range d.evidence.Sources {
				if !slices.Contains(sources, n) {
					t.Errorf("source %s is declared but not granted", n)
				}
			}
			for n := range d.action.StateChecks {
				if !slices.Contains(sources, n) {
					t.Errorf("state check %s names no granted source", n)
				}
			}
			for n := range d.action.Executors {
				if !slices.Contains(tools, n) {
					t.Errorf("executor %s names no granted tool", n)
				}
			}
			for n := range d.verifier.Readbacks {
				if !slices.Contains(tools, n) {
					t.Errorf("readback %s names no granted tool", n)
				}
			}
		})
	}
}

// columns are a source's declared columns, whichever connector it has.
func (m *mcpSource) columns(s *sqlSource) []string {
	if m != nil {
		return m.Columns
	}
	return s.Columns
}
