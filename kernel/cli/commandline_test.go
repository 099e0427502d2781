package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/cli"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/google/go-cmp/cmp"
)

// TestFlagsAnywhere: flags may stand before, between or after the
// arguments, with one dash or two, and give the same output.
func TestFlagsAnywhere(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "reach-coupled.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"reach", "--format", "json", "coupled"},
		{"reach", "coupled", "--format", "json"},
		{"reach", "coupled", "--format=json"},
		{"reach", "-format", "json", "coupled"},
		{"reach", "coupled", "-format=json"},
	} {
		out, err := run(t, args...)
		if err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if diff := cmp.Diff(string(want), out); diff != "" {
			t.Errorf("%q (-want +got):\n%s", args, diff)
		}
	}
}

// TestUsage: what cannot be understood is a usage error naming the
// problem; help is not an error.
func TestUsage(t *testing.T) {
	errorCases := []struct {
		name    string
		args    []string
		wantMsg string
	}{
		{"unknown flag", []string{"eval", "--frobnicate"}, "eval: unknown flag: --frobnicate"},
		{"unknown root flag", []string{"--frobnicate"}, "unknown flag: --frobnicate"},
		{"flag without value", []string{"eval", "--contract"}, "flag needs an argument"},
		{"group alone", []string{"ledger"}, "ledger needs a command"},
		{"unknown subcommand", []string{"ledger", "frobnicate"}, `unknown command "ledger frobnicate"`},
		{"misspelt command", []string{"ledgr", "check"}, `did you mean "ledger"?`},
		{"stray argument", []string{"suite", "extra"}, "suite takes no arguments"},
		{"unknown shell", []string{"completion", "tcsh"}, "completion bash|zsh|fish"},
	}
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.args...)
			if !errors.Is(err, cli.ErrUsage) {
				t.Fatalf("err = %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
	helpCases := []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "  ledger verify    verify the kernel's log"},
		{[]string{"-h"}, "  receipt export   "},
		{[]string{"help"}, "  dev init         "},
		{[]string{"help", "eval"}, "--proposal string"},
		{[]string{"eval", "--help"}, "--proposal string"},
		{[]string{"ledger", "check", "-h"}, "ambitctl ledger check [DIR]"},
		{[]string{"dev", "init", "-help"}, "--agent NAME"},
	}
	for _, tt := range helpCases {
		out, err := run(t, tt.args...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("%q: %v, output:\n%s\nwant it to contain %q", tt.args, err, out, tt.want)
		}
	}
}

// TestCompletion: each shell's script, and the candidates the scripts ask
// ambitctl for: commands, flag values and shipped profiles.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "__start_ambitctl", "zsh": "#compdef ambitctl", "fish": "complete -c ambitctl", "powershell": "Register-ArgumentCompleter",
	} {
		out, err := run(t, "completion", shell)
		if err != nil || !strings.Contains(out, marker) {
			t.Errorf("completion %s: %v; the script lacks %q", shell, err, marker)
		}
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"__completeNoDesc", "led"}, []string{"ledger"}},
		{[]string{"__completeNoDesc", "ledger", ""}, []string{"at", "check", "verify"}},
		{[]string{"__completeNoDesc", "eval", "--format", ""}, []string{"text", "json"}},
		{[]string{"__completeNoDesc", "suite", "--format", ""}, []string{"text", "json", "markdown", "svg"}},
		{[]string{"__completeNoDesc", "reach", ""}, contract.ProfileNames()},
		{[]string{"__completeNoDesc", "completion", ""}, []string{"bash", "zsh", "fish", "powershell"}},
	}
	for _, tt := range tests {
		out, err := run(t, tt.args...)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		// The candidates, then a ":DIRECTIVE" line.
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if diff := cmp.Diff(tt.want, lines[:len(lines)-1]); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.args, diff)
		}
	}
}
