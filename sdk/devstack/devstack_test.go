package devstack

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeExample writes an example folder called name under root with the
// given files and returns the folder.
func writeExample(t *testing.T, root, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const manifest = `
setup:
  - [make-data, --dir, "${DATA}"]
servers:
  - name: desk-mcp
    command: [desk-mcp, --db, "${DATA}/desk.db", --addr-file, "${ADDR_FILE}"]
    addresses: {DESK_URL: mcp}
files: {contract: contract.yaml, evidence: evidence.yaml, action: action.yaml, verifier: verifier.yaml}
`

func TestLoadExample(t *testing.T) {
	root := t.TempDir()
	four := map[string]string{"contract.yaml": "x", "evidence.yaml": "x", "action.yaml": "x", "verifier.yaml": "x"}
	with := func(m string) map[string]string {
		out := map[string]string{ManifestFile: m}
		for k, v := range four {
			out[k] = v
		}
		return out
	}
	dir := writeExample(t, root, "desk", with(manifest))
	e, err := LoadExample(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := &Example{
		Name: "desk", Dir: dir,
		Setup: [][]string{{"make-data", "--dir", "${DATA}"}},
		Servers: []Server{{Name: "desk-mcp", Command: []string{"desk-mcp", "--db", "${DATA}/desk.db", "--addr-file", "${ADDR_FILE}"},
			Addresses: map[string]string{"DESK_URL": "mcp"}}},
		Files: Files{Contract: "contract.yaml", Evidence: "evidence.yaml", Action: "action.yaml", Verifier: "verifier.yaml"},
	}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("example (-want +got):\n%s", diff)
	}
	if _, err := LoadExample(filepath.Join(dir, ManifestFile)); err != nil {
		t.Errorf("by the manifest's path: %v", err)
	}

	tests := []struct {
		name, manifest string
		wants          []string // each must appear in the error
	}{
		{"unknown key", manifest + "extra: 1\n", []string{"extra: unknown key"}},
		{"duplicate key", "files: {contract: contract.yaml}\nfiles: {contract: contract.yaml}\n", []string{"duplicate key"}},
		{"no contract", "files: {evidence: evidence.yaml}\n", []string{"files.contract is required"}},
		{"missing file", "files: {contract: nowhere.yaml}\n", []string{"files.contract:", "nowhere.yaml"}},
		{"file outside", "files: {contract: ../x.yaml}\n", []string{"files.contract: \"../x.yaml\" is not a path inside"}},
		{"program path", "setup: [[/bin/sh, -c, x]]\nfiles: {contract: contract.yaml}\n", []string{"setup[0][0]: \"/bin/sh\" is not a program name"}},
		{"empty command", "setup: [[]]\nfiles: {contract: contract.yaml}\n", []string{"setup[0]: an empty command"}},
		{"unknown placeholder", "setup: [[make, \"${HOME}\"]]\nfiles: {contract: contract.yaml}\n", []string{"setup[0][1]: ${HOME} has no value here"}},
		{"addr file in setup", "setup: [[make, \"${ADDR_FILE}\"]]\nfiles: {contract: contract.yaml}\n", []string{"${ADDR_FILE} has no value here"}},
		{"server without addresses", "servers: [{name: s, command: [s]}]\nfiles: {contract: contract.yaml}\n", []string{"servers[0].addresses: name at least one"}},
		{"server named as a process", "servers: [{name: kernel, command: [s], addresses: {URL: u}}]\nfiles: {contract: contract.yaml}\n", []string{"servers[0].name: \"kernel\""}},
		{"servers repeated", "servers: [{name: s, command: [s], addresses: {URL: u}}, {name: s, command: [s], addresses: {URL2: u}}]\nfiles: {contract: contract.yaml}\n", []string{"servers[1].name: \"s\" is repeated"}},
		{"reserved placeholder", "servers: [{name: s, command: [s], addresses: {DATA: u}}]\nfiles: {contract: contract.yaml}\n", []string{"servers[0].addresses.DATA: not a placeholder name of its own"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeExample(t, root, "bad-"+string(rune('a'+i)), with(tt.manifest))
			_, err := LoadExample(dir)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"DATA": "/d", "URL": "http://127.0.0.1:1/mcp", "BAD": `a"b`}
	tests := []struct {
		in, want, err string
	}{
		{in: "${DATA}/x.db at ${URL}", want: "/d/x.db at http://127.0.0.1:1/mcp"},
		{in: "no placeholder", want: "no placeholder"},
		{in: "${DATA} ${NOPE} ${NOPE} ${ALSO}", err: "no value for ${NOPE}, ${ALSO}"},
		{in: `"${BAD}"`, err: "the value of ${BAD} may not contain quotes"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, vars)
		switch {
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("expand(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSectionsMerge(t *testing.T) {
	root := t.TempDir()
	example := func(name, evidence, action, verifier string) *Example {
		dir := writeExample(t, root, name, map[string]string{"contract.yaml": "x", "evidence.yaml": evidence, "action.yaml": action, "verifier.yaml": verifier})
		return &Example{Name: name, Dir: dir, Files: Files{Contract: "contract.yaml", Evidence: "evidence.yaml", Action: "action.yaml", Verifier: "verifier.yaml"}}
	}
	a := example("a",
		"sources: {records: {provenance: PROVENANCE_TRUSTED, sql: {database: \"${DATA}/a.db\"}}}\n",
		"database: \"${DATA}/action.db\"\nexecutors: {pay: {sql: {table: t}}}\nstate_checks: {records: {sql: {table: t}}}\n",
		"readbacks: {pay: {checks: []}}\n")
	b := example("b",
		"sources: {tickets: {provenance: PROVENANCE_TRUSTED}, records: {provenance: PROVENANCE_TRUSTED, sql: {database: \"${DATA}/a.db\"}}}\n",
		"database: \"${DATA}/action.db\"\nexecutors: {reply: {mcp: {tool: r}}}\n",
		"readbacks: {reply: {checks: []}}\n")
	vars := map[string]string{"DATA": "/d"}
	s := newSections()
	for _, e := range []*Example{a, b} {
		if err := s.add(e, vars); err != nil {
			t.Fatalf("add %s: %v", e.Name, err)
		}
	}
	keys := func(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }
	for what, got := range map[string][]string{
		"sources": keys(s.sources), "executors": keys(s.executors), "state_checks": keys(s.stateChecks), "readbacks": keys(s.readbacks),
	} {
		want := map[string][]string{"sources": {"records", "tickets"}, "executors": {"pay", "reply"}, "state_checks": {"records"}, "readbacks": {"pay", "reply"}}[what]
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	if s.actionDB != "/d/action.db" {
		t.Errorf("database %q", s.actionDB)
	}
	if string(s.sources["records"]) != `{"provenance":"PROVENANCE_TRUSTED","sql":{"database":"/d/a.db"}}` {
		t.Errorf("records source %s: placeholders not expanded", s.sources["records"])
	}

	tests := []struct {
		name                       string
		evidence, action, verifier string
		want                       string
	}{
		{name: "another source of the same name", evidence: "sources: {records: {provenance: PROVENANCE_UNTRUSTED}}\n",
			want: "example c: sources.records is declared differently by example a"},
		{name: "another executor of the same name", action: "executors: {pay: {http: {url: x}}}\n",
			want: "example c: executors.pay is declared differently by example a"},
		{name: "another database", action: "database: /other.db\n",
			want: `example c: database "/other.db" differs from "/d/action.db", which example a gives`},
		{name: "an unknown key", verifier: "readbacks: {}\nchecks: []\n", want: "checks: unknown key"},
		{name: "a placeholder without a value", evidence: "sources: {x: {database: \"${NOPE}\"}}\n", want: "evidence.yaml: no value for ${NOPE}"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := example("c"+strings.Repeat("x", i), tt.evidence, tt.action, tt.verifier)
			c.Name = "c"
			err := s.add(c, vars)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("add: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestNewStackRefuses checks what Start refuses before it creates
// anything.
func TestNewStackRefuses(t *testing.T) {
	root := t.TempDir()
	server := func(name string) string {
		return "servers: [{name: " + name + ", command: [s], addresses: {URL: u}}]\nfiles: {contract: contract.yaml}\n"
	}
	a := writeExample(t, root, "a", map[string]string{ManifestFile: server("upstream"), "contract.yaml": "x"})
	b := writeExample(t, root, "b", map[string]string{ManifestFile: server("upstream"), "contract.yaml": "x"})
	c := writeExample(t, root, "c", map[string]string{ManifestFile: server("other"), "contract.yaml": "x"})
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{name: "no folders", o: Options{Examples: []string{a}}, want: "Dir and BinDir are required"},
		{name: "no example", o: Options{Dir: root, BinDir: root}, want: "at least one example is required"},
		{name: "an example twice", o: Options{Dir: root, BinDir: root, Examples: []string{a, c, a}}, want: "example a is given twice"},
		{name: "a server name twice", o: Options{Dir: root, BinDir: root, Examples: []string{a, b}}, want: "example b: server upstream is also a server of example a"},
		{name: "a missing manifest", o: Options{Dir: root, BinDir: root, Examples: []string{filepath.Join(root, "none")}}, want: "example:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newStack(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("newStack: %v, want an error saying %q", err, tt.want)
			}
		})
	}
	s, err := newStack(Options{Dir: root, BinDir: root, Examples: []string{a, c}, Agents: 3})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"agent", "agent-2", "agent-3"}, s.Agents); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	if s.opts.Durability != DefaultDurability || s.opts.CapabilityTTL != DefaultCapabilityTTL || s.opts.LogLevel != DefaultLogLevel {
		t.Errorf("defaults not applied: %+v", s.opts)
	}
}
