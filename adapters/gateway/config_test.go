package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/adapters/gateway"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
)

const validConfig = `identity: agent
pki_dir: /keys/agent
kernel: 127.0.0.1:7701
evidence: 127.0.0.1:7711
action: 127.0.0.1:7712
verifier: 127.0.0.1:7713
task_id: refund-c-1001
purpose: expense-refund
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ambit-mcp.yaml")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		errs       []string
	}{
		{name: "valid", text: validConfig},
		{name: "an explicit loopback listen address", text: validConfig + "listen: localhost:7801\n"},
		{name: "kernel replicas", text: strings.Replace(validConfig, "kernel: 127.0.0.1:7701", "kernel: 127.0.0.1:7701,127.0.0.2:7701", 1)},
		{name: "a kernel replica without a port", text: strings.Replace(validConfig, "kernel: 127.0.0.1:7701", "kernel: 127.0.0.1:7701,kernel-2", 1),
			errs: []string{"kernel: address kernel-2: missing port in address"}},
		{name: "nothing", text: "{}", errs: []string{"pki_dir is required", "kernel is required", "evidence is required",
			"action is required", "verifier is required", "task_id is required", "purpose is required"}},
		{name: "an address without a port", text: strings.Replace(validConfig, "127.0.0.1:7711", "evidence.local", 1),
			errs: []string{"evidence: address evidence.local: missing port in address"}},
		{name: "listening beyond loopback", text: validConfig + "listen: 0.0.0.0:7801\n",
			errs: []string{`listen: "0.0.0.0:7801": serve on a loopback address only`}},
		{name: "keys that would do nothing", text: validConfig + "reflection: true\nhealth_listen: 127.0.0.1:0\n",
			errs: []string{"reflection: ambit-mcp serves no gRPC listener", "health_listen: ambit-mcp serves no gRPC health listener"}},
		{name: "an unknown key", text: validConfig + "task: x\n", errs: []string{"task"}},
		{name: "a duplicate key", text: validConfig + "purpose: other\n", errs: []string{"purpose: duplicate key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c gateway.Config
			err := config.LoadChecked(writeConfig(t, tc.text), nil, &c)
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if c.Identity != gateway.DefaultIdentity || c.CallTimeout.D(0) != gateway.DefaultCallTimeout || c.Listen == "" {
					t.Errorf("defaults not applied: %+v", c)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want gateway.Flags
		err  string
	}{
		{args: []string{"--config", "c.yaml", "--stdio"}, want: gateway.Flags{Flags: service.Flags{Config: "c.yaml"}, Stdio: true}},
		{args: []string{"--config", "c.yaml", "--listen", "127.0.0.1:7801", "--addr-file", "a.json"},
			want: gateway.Flags{Flags: service.Flags{Config: "c.yaml", Listen: "127.0.0.1:7801", AddrFile: "a.json"}}},
		{args: []string{"--version"}, want: gateway.Flags{Flags: service.Flags{Version: true}}},
		{args: []string{"--stdio"}, err: "--config is required"},
		{args: []string{"--config", "c.yaml", "--stdio", "--listen", "127.0.0.1:1"}, err: "--listen has no meaning with --stdio"},
		{args: []string{"--config", "c.yaml", "extra"}, err: "unexpected arguments"},
		{args: []string{"--config", "c.yaml", "--reflection"}, err: "flag provided but not defined"},
	} {
		got, err := gateway.ParseFlags(tc.args, io.Discard)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
		} else if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.args, diff)
		}
	}
	var usage bytes.Buffer
	if _, err := gateway.ParseFlags([]string{"--help"}, &usage); !errors.Is(err, flag.ErrHelp) || !strings.Contains(usage.String(), "--stdio") {
		t.Errorf("--help: %v\n%s", err, usage.String())
	}
}

// nopCloser is stdin or stdout for Run.
type nopCloser struct {
	io.Reader
	io.Writer
}

func (nopCloser) Close() error { return nil }

// TestRunRefuses: what Run refuses before it connects to anything.
func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"no configuration file", []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml"},
		{"stdio with traces on stdout", []string{"--config", writeConfig(t, validConfig+"tracing: stdout\n"), "--stdio"},
			"tracing: stdout carries MCP with --stdio"},
		{"a certificate that is not there", []string{"--config", writeConfig(t, strings.Replace(validConfig, "/keys/agent", t.TempDir(), 1)), "--stdio"},
			"ambit-mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := gateway.Run(context.Background(), tc.args, nopCloser{Reader: strings.NewReader("")}, nopCloser{Writer: &out})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
	var out bytes.Buffer
	if err := gateway.Run(context.Background(), []string{"--version"}, nopCloser{Reader: strings.NewReader("")}, nopCloser{Writer: &out}); err != nil ||
		!strings.HasPrefix(out.String(), "ambit-mcp ") {
		t.Errorf("--version: %v %q", err, out.String())
	}
}
