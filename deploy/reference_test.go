package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/deploy"
	"github.com/google/go-cmp/cmp"
)

// TestReferenceIsCurrent: config.md is what the configuration structs
// give now. UPDATE_GOLDEN=1 (or go generate ./deploy) rewrites it.
func TestReferenceIsCurrent(t *testing.T) {
	got, err := deploy.Reference("..")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile("config.md", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("config.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("config.md is out of step with the configuration structs: run go generate ./deploy (-committed +structs):\n%s", diff)
	}
}

// TestReferenceKeys: the reference lists the keys a configuration file
// may hold, with the defaults ApplyDefaults sets, and documents every one.
func TestReferenceKeys(t *testing.T) {
	sections, err := deploy.Sections("..")
	if err != nil {
		t.Fatal(err)
	}
	find := func(process, path string) deploy.Key {
		t.Helper()
		for _, s := range sections {
			if s.Process.Name != process {
				continue
			}
			for _, k := range s.Keys {
				if k.Path == path {
					return k
				}
			}
		}
		t.Fatalf("%s has no key %s", process, path)
		return deploy.Key{}
	}
	tests := []struct {
		process, path string
		want          deploy.Key
	}{
		{"ambit-kernel", "listen.governance", deploy.Key{Path: "listen.governance", Type: "string", Env: "AMBIT_LISTEN_GOVERNANCE"}},
		{"ambit-kernel", "capability_ttl", deploy.Key{Path: "capability_ttl", Type: "duration", Default: "`5m0s`", Env: "AMBIT_CAPABILITY_TTL"}},
		{"ambit-kernel", "durability", deploy.Key{Path: "durability", Type: "string", Default: "`full`", Env: "AMBIT_DURABILITY"}},
		{"ambit-evidence", "identity", deploy.Key{Path: "identity", Type: "string", Default: "`evidence`", Env: "AMBIT_IDENTITY"}},
		{"ambit-evidence", "sources.<name>.sql", deploy.Key{Path: "sources.<name>.sql", Type: "object, optional"}},
		{"ambit-action", "executors.<name>.http.timeout", deploy.Key{Path: "executors.<name>.http.timeout", Type: "duration", Default: "`10s`"}},
		{"ambit-verifier", "readbacks.<name>.checks[].code", deploy.Key{Path: "readbacks.<name>.checks[].code", Type: "string"}},
		{"ambit-verifier", "read_timeout", deploy.Key{Path: "read_timeout", Type: "duration", Default: "`5s`", Env: "AMBIT_READ_TIMEOUT"}},
		{"ambitctl contexts", "contexts.<name>.pki", deploy.Key{Path: "contexts.<name>.pki", Type: "string"}},
	}
	for _, tt := range tests {
		got := find(tt.process, tt.path)
		got.Doc = ""
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.process, tt.path, diff)
		}
	}
	for _, s := range sections {
		for _, k := range s.Keys {
			if k.Doc == "" || k.Type == "" {
				t.Errorf("%s %s: type %q, meaning %q", s.Process.Name, k.Path, k.Type, k.Doc)
			}
		}
	}
}

// TestExamples: each example — the shared topology's and the per-agent
// topology's — loads as its binary loads it (strictly, with its defaults
// and checks), and names every key the reference lists, at least in a
// comment.
func TestExamples(t *testing.T) {
	sections, err := deploy.Sections("..")
	if err != nil {
		t.Fatal(err)
	}
	perAgent := deploy.PerAgent()
	for _, s := range sections {
		p := s.Process
		var files []string
		if p.Example != "" {
			files = append(files, p.Example)
		}
		if f, ok := perAgent[p.Name]; ok {
			files = append(files, filepath.Join(deploy.PerAgentDir, f))
			delete(perAgent, p.Name)
		}
		for _, file := range files {
			t.Run(p.Name+"/"+file, func(t *testing.T) {
				if err := p.Load(file); err != nil {
					t.Fatalf("%s does not load: %v", file, err)
				}
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range s.Keys {
					parts := strings.Split(strings.ReplaceAll(k.Path, "[]", ""), ".")
					leaf := parts[len(parts)-1]
					// A key, commented out or not, in block or flow style.
					re := regexp.MustCompile(`(?m)(^\s*(#\s*)?(- )?|[{,]\s*)` + regexp.QuoteMeta(leaf) + `:`)
					if !re.Match(data) {
						t.Errorf("%s does not show the key %s", file, k.Path)
					}
				}
			})
		}
	}
	if len(perAgent) > 0 {
		t.Errorf("per-agent examples of binaries the reference does not list: %v", perAgent)
	}
}

// TestUnitsAndContainerfiles: every process has a systemd unit and a
// Containerfile that run its binary with its example configuration, and
// build it from a folder that exists.
func TestUnitsAndContainerfiles(t *testing.T) {
	for _, p := range deploy.Processes() {
		if p.Example == "" {
			continue
		}
		unit, err := os.ReadFile(filepath.Join("systemd", p.Name+".service"))
		if err != nil {
			t.Error(err)
			continue
		}
		exec := "ExecStart=/usr/local/bin/" + p.Name + " --config /etc/ambit/" + p.Example
		if !strings.Contains(string(unit), exec) {
			t.Errorf("%s.service lacks %q", p.Name, exec)
		}
		cf, err := os.ReadFile(filepath.Join("containers", p.Name+".Containerfile"))
		if err != nil {
			t.Error(err)
			continue
		}
		build := regexp.MustCompile(`go build .* -o /out/` + p.Name + ` (\./[a-z/-]+)`).FindSubmatch(cf)
		if build == nil {
			t.Errorf("%s.Containerfile builds no %s", p.Name, p.Name)
			continue
		}
		if info, err := os.Stat(filepath.Join("..", string(build[1]))); err != nil || !info.IsDir() {
			t.Errorf("%s.Containerfile builds %s, which is no folder: %v", p.Name, build[1], err)
		}
		for _, want := range []string{"COPY deploy/" + p.Example + " /etc/ambit/" + p.Example, `"--config", "/etc/ambit/` + p.Example + `"`} {
			if !strings.Contains(string(cf), want) {
				t.Errorf("%s.Containerfile lacks %q", p.Name, want)
			}
		}
	}
}
