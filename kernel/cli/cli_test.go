package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/cli"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/google/go-cmp/cmp"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Main(context.Background(), &cli.Env{Stdout: &out, Stderr: &errOut}, args)
	return out.String(), err
}

// golden compares got with testdata/NAME; UPDATE_GOLDEN=1 rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func TestGolden(t *testing.T) {
	root := filepath.Join("..", "..")
	coupled := filepath.Join(root, "kernel", "contract", "profiles", "coupled.yaml")
	tests := []struct {
		name string
		args []string
	}{
		{"suite.txt", []string{"suite"}},
		{"suite.json", []string{"suite", "--format", "json"}},
		{"eval-refund-17-40.txt", []string{"eval", "--contract", coupled, "--proposal", filepath.Join(root, "examples/proposals/refund-17-40.yaml"), "--now", "2030-01-01T00:00:00Z"}},
		{"eval-refund-74-00.json", []string{"eval", "--contract", coupled, "--proposal", filepath.Join(root, "examples/proposals/refund-74-00.yaml"), "--now", "2030-01-01T00:00:00Z", "--format", "json"}},
		{"eval-injected-exfiltration.txt", []string{"eval", "--contract", filepath.Join(root, "kernel/contract/profiles/coupled-strict.yaml"), "--proposal", filepath.Join(root, "examples/proposals/injected-exfiltration.yaml"), "--now", "2030-01-01T00:00:00Z"}},
		{"eval-expired.txt", []string{"eval", "--proposal", filepath.Join(root, "examples/proposals/refund-17-40.yaml"), "--now", "2030-01-01T04:00:01Z", "--contract", coupled}},
		{"eval-refund-call.txt", []string{"eval", "--contract", coupled, "--proposal", filepath.Join(root, "examples/proposals/refund-call.yaml"), "--now", "2030-01-01T00:00:00Z"}},
		{"eval-refund-call-other-payee.txt", []string{"eval", "--contract", coupled, "--proposal", filepath.Join(root, "examples/proposals/refund-call-other-payee.yaml"), "--now", "2030-01-01T00:00:00Z"}},
		{"ledger-check.txt", []string{"ledger", "check"}},
		{"suite.md", []string{"suite", "--format", "markdown"}},
		{"suite.svg", []string{"suite", "--format", "svg"}},
		{"reach-coupled.json", []string{"reach", "--format", "json", coupled}},
		{"reach.svg", []string{"reach", "--format", "svg", "unrestricted", "action-only", "evidence-plus-action", "coupled", "coupled-strict"}},
		{"minimize-unrestricted.json", []string{"minimize", "--contract", "unrestricted", "--episodes", "seed", "--format", "json"}},
		{"minimize-coupled-all.txt", []string{"minimize", "--contract", "coupled", "--episodes", "all"}},
		{"debt-coupled-unrestricted.json", []string{"debt", "coupled", "unrestricted", "--format", "json", "--episodes", "seed"}},
		{"debt-coupled-evidence-plus-action.record.yaml", []string{"debt", "coupled", "evidence-plus-action", "--format", "record",
			"--item-id", "DEBT-1", "--old-ref", "CTR-coupled", "--new-ref", "CTR-wide", "--decision", "accepted", "--rationale", "re-run on every shipped corpus"}},
	}
	// Every command on every shipped profile: reach and minimize of each,
	// and the debt of widening each into the one the seed lists before it
	// (and of the narrowing back, which owes nothing).
	names := contract.ProfileNames()
	for i, name := range names {
		tests = append(tests,
			struct {
				name string
				args []string
			}{"reach-" + name + ".txt", []string{"reach", name}},
			struct {
				name string
				args []string
			}{"minimize-" + name + ".txt", []string{"minimize", "--contract", name, "--episodes", "seed"}})
		if i > 0 {
			tests = append(tests, struct {
				name string
				args []string
			}{"debt-" + name + "-" + names[i-1] + ".txt", []string{"debt", name, names[i-1]}})
		}
	}
	tests = append(tests, struct {
		name string
		args []string
	}{"debt-unrestricted-coupled.txt", []string{"debt", "unrestricted", "coupled"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			if err != nil {
				t.Fatalf("%v: %v", tt.args, err)
			}
			golden(t, tt.name, out)
		})
	}
}

func TestErrors(t *testing.T) {
	root := filepath.Join("..", "..")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("contract_id: x\nbinding: {task_id: t, subject: \"\", purpose: p, state_version: s, valid_until: \"2030-01-01T00:00:00Z\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr error
		wantMsg string
	}{
		{"no command", nil, cli.ErrUsage, ""},
		{"unknown command", []string{"frobnicate"}, cli.ErrUsage, "unknown command"},
		{"eval without files", []string{"eval"}, cli.ErrUsage, "--contract"},
		{"bad format", []string{"eval", "--format", "xml"}, cli.ErrUsage, "text or json"},
		{"bad time", []string{"eval", "--contract", bad, "--proposal", bad, "--now", "yesterday"}, cli.ErrUsage, "--now"},
		{"malformed contract", []string{"eval", "--contract", bad, "--proposal", filepath.Join(root, "examples/proposals/refund-17-40.yaml")}, nil, "binding.subject"},
		{"dev init without dir", []string{"dev", "init"}, cli.ErrUsage, "DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestLedgerCheckFails(t *testing.T) {
	fixtures, err := canon.ShippedFixtures()
	if err != nil {
		t.Fatal(err)
	}
	// Take the baseline fixture and expect the wrong class for its policy.
	data, err := os.ReadFile(filepath.Join("..", "canon", "fixtures", "01_baseline.yaml"))
	if err != nil || len(fixtures) == 0 {
		t.Fatal(err)
	}
	dir := t.TempDir()
	broken := strings.Replace(string(data), "POL-2026-09: CANON_CLASS_CANONICAL", "POL-2026-09: CANON_CLASS_HOLD", 1)
	if broken == string(data) {
		t.Fatal("baseline fixture changed shape; update this test")
	}
	if err := os.WriteFile(filepath.Join(dir, "01_broken.yaml"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "ledger", "check", dir)
	if !errors.Is(err, cli.ErrFailed) {
		t.Fatalf("err = %v, want ErrFailed", err)
	}
	if !strings.Contains(out, "FAIL  Baseline") || !strings.Contains(out, "POL-2026-09 expected HOLD computed CANONICAL") {
		t.Errorf("output:\n%s", out)
	}
}

func TestDevInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	out, err := run(t, "dev", "init", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca/ca.pem", "ca/ca.key", "kernel/kernel.pem", "kernel/kernel.sign.key", "kernel/ca.pem", "kernel/action.sign.pub",
		"agent/agent.pem", "governance/governance.pem", "policy-owner/policy-owner.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// No process folder holds the CA key or another identity's key.
	for _, f := range []string{"kernel/ca.key", "kernel/agent.key", "kernel/agent.sign.key", "agent/kernel.sign.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists", f)
		}
	}
	if !strings.Contains(out, "kernel") {
		t.Errorf("output: %s", out)
	}
	// Running it again keeps what exists.
	if _, err := run(t, "dev", "init", dir); err != nil {
		t.Fatalf("second run: %v", err)
	}
	// Adding agents needs no openssl: a folder of their own, signed by the
	// same CA, with the kernel's public key.
	kernelCert, _ := os.ReadFile(filepath.Join(dir, "kernel", "kernel.pem"))
	out, err = run(t, "dev", "init", "--agent", "alice", "--agent", "bob", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alice", "bob"} {
		id, err := pki.LoadLocal(pki.IdentityDir(dir, name), name, pki.RoleAgent)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if id.Identity.Name != name {
			t.Errorf("identity %+v", id.Identity)
		}
		if _, err := pki.LoadPublicKey(pki.IdentityDir(dir, name), "kernel"); err != nil {
			t.Errorf("%s has no kernel key: %v", name, err)
		}
		if !strings.Contains(out, name) {
			t.Errorf("output does not name %s: %s", name, out)
		}
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "kernel", "kernel.pem")); string(again) != string(kernelCert) {
		t.Error("adding agents reissued the kernel's certificate")
	}
	if _, err := run(t, "dev", "init", "--agent", "Not/Valid", dir); err == nil {
		t.Error("an invalid agent name was accepted")
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		out, err := run(t, arg)
		if err != nil || !strings.HasPrefix(out, "ambitctl ") {
			t.Errorf("%s: %q, %v", arg, out, err)
		}
	}
	out, err := run(t, "--help")
	if err != nil || !strings.Contains(out, "usage: ambitctl") {
		t.Errorf("--help: %q, %v", out, err)
	}
}

// TestEvalInterrupted: an interrupt (the context ends) stops eval.
func TestEvalInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	err := cli.Main(ctx, &cli.Env{Stdout: &out, Stderr: &errOut}, []string{"eval", "--contract", "c.yaml", "--proposal", "p.yaml"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("eval after an interrupt = %v, want context.Canceled", err)
	}
}
