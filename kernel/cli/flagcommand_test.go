package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFlagCommand: a command written for the standard flag package runs
// under cobra with its own flags, wherever they stand; its --help is not
// an error and a bad flag is a usage error.
func TestFlagCommand(t *testing.T) {
	type got struct {
		Name string
		Args []string
	}
	var seen got
	run := func(_ context.Context, env *Env, args []string) error {
		fs := newFlags(env, "dev up")
		name := fs.String("name", "", "a `NAME`")
		if err := parse(fs, args); err != nil {
			return err
		}
		seen = got{*name, fs.Args()}
		return nil
	}
	tests := []struct {
		args    []string
		want    got
		wantErr error
		stderr  string
	}{
		{[]string{"dir", "--name", "x"}, got{"x", []string{"dir"}}, nil, ""},
		{[]string{"-name=x", "dir", "more"}, got{"x", []string{"dir", "more"}}, nil, ""},
		{[]string{"--help"}, got{}, nil, "-name NAME"},
		{[]string{"--frobnicate"}, got{}, ErrUsage, "flag provided but not defined"},
	}
	for _, tt := range tests {
		seen = got{}
		var out, errOut bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errOut}
		root := newRoot(env)
		root.AddCommand(group(env, "stack", "a group", flagCommand(env, "up DIR", "start", run)))
		root.SetArgs(append([]string{"stack", "up"}, tt.args...))
		_, err := root.ExecuteContextC(context.Background())
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%q: err = %v, want %v", tt.args, err, tt.wantErr)
		}
		if diff := cmp.Diff(tt.want, seen); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.args, diff)
		}
		if !strings.Contains(errOut.String(), tt.stderr) {
			t.Errorf("%q: stderr %q, want it to contain %q", tt.args, errOut.String(), tt.stderr)
		}
	}
}
