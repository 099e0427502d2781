package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/supportdesk/desk"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
)

// asCommand makes the test binary act as the command when the variable is
// set, so the stdio test runs the real command in its own process.
const asCommand = "SUPPORTDESK_MCP_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ticket reads T-501 through a session.
func ticket(t *testing.T, s *mcpconn.Session) desk.Ticket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := s.Call(ctx, desk.ToolGetTicket, map[string]any{"ticket_id": desk.DemoTicket})
	if err != nil {
		t.Fatal(err)
	}
	var tk desk.Ticket
	if err := json.Unmarshal(raw, &tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestHTTPWithAddrFile(t *testing.T) {
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "desk.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--db", filepath.Join(dir, "desk.db"), "--addr", "127.0.0.1:0", "--addr-file", addrFile, "--log-level", "error"})
	}()
	var addrs map[string]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(addrFile)
		if err == nil {
			if err := json.Unmarshal(data, &addrs); err != nil {
				t.Fatalf("addr file %s: %v", data, err)
			}
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no addr file: %v (run: %v)", err, <-done)
		}
		time.Sleep(20 * time.Millisecond)
	}
	url := addrs["mcp"]
	if len(addrs) != 1 || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("addr file = %v, want {mcp: http://127.0.0.1:PORT/mcp}", addrs)
	}
	s, err := mcpconn.Dial(ctx, mcpconn.Config{URL: url}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := ticket(t, s); got.CustomerID != desk.DemoCustomer || got.Version != desk.DemoTicketVersion {
		t.Errorf("T-501 = %+v, want the seeded ticket", got)
	}
	_ = s.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v, want a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
}

func TestStdio(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// mcpconn starts the command with the process's environment.
	t.Setenv(asCommand, "1")
	db := filepath.Join(t.TempDir(), "desk.db")
	ctx := context.Background()
	s, err := mcpconn.Dial(ctx, mcpconn.Config{Command: []string{self, "--db", db, "--stdio", "--log-level", "error"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := ticket(t, s); got.TicketID != desk.DemoTicket || got.Status != desk.StatusOpen {
		t.Errorf("T-501 = %+v, want the seeded open ticket", got)
	}
	raw, err := s.Call(ctx, desk.ToolIssueCredit, map[string]any{"ticket_id": "T-501", "customer_id": "cust-42",
		"amount": map[string]any{"currency_code": "GBP", "minor_units": 900}, "idempotency_key": "stdio-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"credit_id":"credit-1"`) {
		t.Errorf("issue_credit = %s", raw)
	}
	if got := ticket(t, s); got.CreditTotalMinor != 900 || got.Version != desk.DemoTicketVersion+1 {
		t.Errorf("T-501 after a credit = %+v", got)
	}
}

func TestRefusals(t *testing.T) {
	db := filepath.Join(t.TempDir(), "desk.db")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no database", []string{"--addr", "127.0.0.1:0"}, "--db is required"},
		{"every interface", []string{"--db", db, "--addr", ":0"}, "loopback address only"},
		{"a public address", []string{"--db", db, "--addr", "0.0.0.0:0"}, "loopback address only"},
		{"addr file with stdio", []string{"--db", db, "--stdio", "--addr-file", "x.json"}, "--addr-file has no meaning with --stdio"},
		{"stray argument", []string{"--db", db, "serve"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestCommandExitsNonZero runs the real process with a bad flag.
func TestCommandExitsNonZero(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), asCommand+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "supportdesk-mcp: --db is required") {
		t.Errorf("exit = %v, stderr %q; want exit 1 naming --db", err, stderr.String())
	}
}
