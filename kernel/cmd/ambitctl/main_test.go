package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExitCodes: help and version succeed, a command line that cannot be
// understood exits 2 with a message saying why, a failed command 1.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		quietError bool
	}{
		{"help", []string{"--help"}, 0, "usage: ambitctl <command>", "", true},
		{"help command", []string{"help"}, 0, "usage: ambitctl <command>", "", true},
		{"command help", []string{"eval", "--help"}, 0, "--proposal", "", true},
		{"version", []string{"--version"}, 0, "ambitctl ", "", true},
		{"no command", nil, 2, "usage: ambitctl <command>", "ambitctl: usage: no command given", false},
		{"unknown command", []string{"frobnicate"}, 2, "", `ambitctl: usage: unknown command "frobnicate"`, false},
		{"unknown flag", []string{"eval", "--frobnicate"}, 2, "", "ambitctl: usage: eval: unknown flag: --frobnicate", false},
		{"missing argument", []string{"dev", "init"}, 2, "", "ambitctl: usage: dev init [--agent NAME]... DIR", false},
		{"failed command", []string{"eval", "--contract", "no-such.yaml", "--proposal", "no-such.yaml"}, 1, "", "no-such.yaml", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errOut)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut.String())
			}
			if !strings.Contains(out.String(), tt.stdout) {
				t.Errorf("stdout %q, want it to contain %q", out.String(), tt.stdout)
			}
			if !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut.String(), tt.stderr)
			}
			if tt.quietError && errOut.Len() > 0 {
				t.Errorf("stderr %q, want nothing", errOut.String())
			}
		})
	}
}
