package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ambitkernel/ambit/adapters/gateway"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/pki"
)

// TestRunServesHTTP runs the program in process with the agent's real
// keys and nothing listening where the kernel and adapters should be: it
// serves the MCP endpoint and metrics on loopback, names both in the
// address file, refuses cross-origin browser requests, says why it can
// list nothing, and stops cleanly when its context ends.
func TestRunServesHTTP(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "pki")
	if err := pki.DevInit(keys, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	cfgFile, addrFile := filepath.Join(dir, "ambit-mcp.yaml"), filepath.Join(dir, "addr.json")
	if err := config.Write(cfgFile, map[string]any{
		"identity": "agent", "pki_dir": pki.IdentityDir(keys, "agent"), "log_level": "error",
		"kernel": "127.0.0.1:1", "evidence": "127.0.0.1:1", "action": "127.0.0.1:1", "verifier": "127.0.0.1:1",
		"task_id": "task-1", "purpose": "p", "metrics": "127.0.0.1:0", "shutdown_grace": "1s",
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, []string{"--config", cfgFile, "--addr-file", addrFile}, nopCloser{Reader: strings.NewReader("")}, nopCloser{Writer: io.Discard})
	}()
	var addrs map[string]string
	for deadline := time.Now().Add(10 * time.Second); addrs == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(addrFile); err == nil {
			_ = json.Unmarshal(data, &addrs)
		}
	}
	url, metrics := addrs[gateway.MCPListener], addrs[gateway.MetricsListener]
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, gateway.Path) || metrics == "" {
		cancel()
		t.Fatalf("addresses %v (run: %v)", addrs, <-done)
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err == nil || !strings.Contains(err.Error(), "cannot list task task-1's grant") {
		t.Errorf("listing with the kernel down: %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Error(err)
	}

	get := func(u string, header http.Header) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if strings.HasSuffix(u, "/metrics") {
			req, err = http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("http://"+metrics+"/metrics", http.Header{}); code != http.StatusOK || !strings.Contains(body, "grpc_client_started_total") {
		t.Errorf("metrics: %d\n%.300s", code, body)
	}
	if code, _ := get(url, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"},
		"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}); code != http.StatusForbidden {
		t.Errorf("a cross-origin request: %d, want %d", code, http.StatusForbidden)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop within 10s of its context ending")
	}
}
