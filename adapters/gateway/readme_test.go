package gateway_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/adapters/gateway"
	"github.com/ambitkernel/ambit/sdk/config"
)

// snippets are the README's fenced blocks marked <!-- snippet: NAME -->.
func snippets(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	re := regexp.MustCompile("(?s)<!-- snippet: ([^ ]+) -->\n```[a-z]*\n(.*?)\n```")
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// mcpServer is one entry of an MCP client's mcpServers.
type mcpServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Type    string   `json:"type"`
	URL     string   `json:"url"`
}

func server(t *testing.T, snippet string) mcpServer {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(snippet))
	dec.DisallowUnknownFields()
	var doc struct {
		MCPServers map[string]mcpServer `json:"mcpServers"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the README's MCP client configuration does not parse: %v\n%s", err, snippet)
	}
	if len(doc.MCPServers) != 1 {
		t.Fatalf("want one server, got %v", doc.MCPServers)
	}
	for _, s := range doc.MCPServers {
		return s
	}
	return mcpServer{}
}

// TestReadme checks the README's "Use from any MCP client": the
// configuration loads as ambit-mcp loads it, the client configurations
// parse, name the binary the Makefile builds with flags it takes, and
// point at the endpoint the configuration serves; every _meta key is
// documented.
func TestReadme(t *testing.T) {
	s := snippets(t)
	for _, name := range []string{"ambit-mcp.yaml", "mcp-stdio", "mcp-http"} {
		if s[name] == "" {
			t.Fatalf("README has no snippet %q", name)
		}
	}
	f := filepath.Join(t.TempDir(), "ambit-mcp.yaml")
	if err := os.WriteFile(f, []byte(s["ambit-mcp.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg gateway.Config
	if err := config.LoadChecked(f, nil, &cfg); err != nil {
		t.Fatalf("the README's configuration: %v", err)
	}

	stdio := server(t, s["mcp-stdio"])
	if filepath.Base(stdio.Command) != gateway.Name {
		t.Errorf("command %q is not the %s binary", stdio.Command, gateway.Name)
	}
	makefile, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^BINARIES :=.* ambit-mcp( |$)`).Match(makefile) || !strings.Contains(string(makefile), "./adapters/cmd/ambit-mcp") {
		t.Errorf("make build does not build %s", gateway.Name)
	}
	flags, err := gateway.ParseFlags(stdio.Args, io.Discard)
	if err != nil {
		t.Fatalf("args %q: %v", stdio.Args, err)
	}
	if !flags.Stdio || flags.Config == "" {
		t.Errorf("args %q do not serve stdio with a configuration", stdio.Args)
	}

	http := server(t, s["mcp-http"])
	if want := "http://" + cfg.Listen + gateway.Path; http.URL != want || http.Type != "http" {
		t.Errorf("url %q (type %q), want %q: the configuration's listen address and the endpoint's path", http.URL, http.Type, want)
	}

	readme, _ := os.ReadFile(filepath.Join(repo, "README.md"))
	for _, key := range []string{gateway.MetaOutcome, gateway.MetaReasons, gateway.MetaDecisionID, gateway.MetaApprovalID,
		gateway.MetaCapabilityID, gateway.MetaEffectReceiptID, gateway.MetaReadbackReceiptID, gateway.MetaReadbackStatus,
		gateway.MetaReceiptID, gateway.MetaErrorReason, gateway.MetaItemID, gateway.SelfViewURI, gateway.BoundaryTool} {
		if !strings.Contains(string(readme), "`"+key+"`") {
			t.Errorf("README does not document %s", key)
		}
	}
}
