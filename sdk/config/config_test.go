package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
)

type sample struct {
	Name    string          `json:"name"`
	Timeout config.Duration `json:"timeout"`
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    sample
		wantErr string
	}{
		{name: "ok", yaml: "name: kernel\ntimeout: 3s\n", want: sample{Name: "kernel", Timeout: config.Duration(3 * time.Second)}},
		{name: "unknown key", yaml: "name: kernel\ntimout: 3s\n", wantErr: "timout"},
		{name: "bad duration", yaml: "timeout: soon\n", wantErr: "soon"},
		{name: "negative duration", yaml: "timeout: -1s\n", wantErr: "negative"},
		{name: "duplicate key", yaml: "name: kernel\ntimeout: 3s\nname: \"*\"\n", wantErr: "line 3: name: duplicate key (first at line 1)"},
		{name: "key in another case", yaml: "Name: kernel\n", wantErr: "line 1: Name: unknown key"},
		{name: "wrong kind names its line", yaml: "timeout: 3s\nname: [kernel]\n", wantErr: "line 2: name: want a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var got sample
			err := config.Load(path, &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want mention of %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestWriteRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	in := sample{Name: "x", Timeout: config.Duration(90 * time.Second)}
	if err := config.Write(path, in); err != nil {
		t.Fatal(err)
	}
	var out sample
	if err := config.Load(path, &out); err != nil || out != in {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	if got := config.Duration(0).D(time.Minute); got != time.Minute {
		t.Errorf("default = %v", got)
	}
}

// checked is a [config.Checked] configuration.
type checked struct {
	Name    string          `json:"name"`
	Timeout config.Duration `json:"timeout"`
}

func (c *checked) ApplyDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = config.Duration(time.Second)
	}
}

func (c *checked) Validate() error {
	if c.Name == "" {
		return errors.New("name is required")
	}
	return nil
}

func TestLoadAs(t *testing.T) {
	write := func(body string) string {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	got, err := config.LoadAs[checked](write("name: kernel\n"))
	if err != nil || got != (checked{Name: "kernel", Timeout: config.Duration(time.Second)}) {
		t.Errorf("LoadAs = %+v, %v; want the default timeout applied", got, err)
	}
	for body, want := range map[string]string{"timeout: 2s\n": "name is required", "name: x\nnmae: y\n": "nmae", "name: x\nname: y\n": "duplicate key"} {
		path := write(body)
		got, err := config.LoadAs[checked](path)
		if err == nil || !strings.Contains(err.Error(), want) || got != (checked{}) {
			t.Errorf("LoadAs(%q) = %+v, %v; want the zero value and an error containing %q", body, got, err, want)
		}
		if want == "name is required" && !strings.Contains(err.Error(), path) {
			t.Errorf("validation error %q does not name the file", err)
		}
	}
}

type nested struct {
	Name    string          `json:"name"`
	Timeout config.Duration `json:"timeout"`
	Listen  struct {
		Agent   string `json:"agent"`
		Adapter string `json:"adapter"`
	} `json:"listen"`
	Peers   map[string][]string `json:"peers"`
	Verbose bool                `json:"verbose"`
}

func TestLoadEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("name: file\nlisten: {agent: a, adapter: b}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(vars map[string]string) config.Env {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	var got nested
	err := config.LoadEnv(path, env(map[string]string{
		"AMBIT_NAME":         "0123",
		"AMBIT_TIMEOUT":      "4s",
		"AMBIT_LISTEN_AGENT": "127.0.0.1:9",
		"AMBIT_PEERS":        "{evidence: [e1, e2]}",
		"AMBIT_VERBOSE":      "true",
		"AMBIT_UNRELATED":    "x",
	}), &got)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "0123" || got.Timeout != config.Duration(4*time.Second) || got.Listen.Agent != "127.0.0.1:9" ||
		got.Listen.Adapter != "b" || len(got.Peers["evidence"]) != 2 || !got.Verbose {
		t.Errorf("LoadEnv = %+v", got)
	}
	err = config.LoadEnv(path, env(map[string]string{"AMBIT_VERBOSE": "loud"}), &nested{})
	if err == nil || !strings.Contains(err.Error(), "verbose: want true or false") {
		t.Errorf("bad override = %v, want it named by key", err)
	}
	vars, err := config.EnvVars(&nested{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AMBIT_LISTEN_ADAPTER listen.adapter", "AMBIT_LISTEN_AGENT listen.agent", "AMBIT_NAME name",
		"AMBIT_PEERS peers", "AMBIT_TIMEOUT timeout", "AMBIT_VERBOSE verbose"}
	if strings.Join(vars, ",") != strings.Join(want, ",") {
		t.Errorf("EnvVars = %q, want %q", vars, want)
	}
	type clash struct {
		AB string `json:"a_b"`
		A  struct {
			B string `json:"b"`
		} `json:"a"`
	}
	if _, err := config.EnvVars(&clash{}); err == nil {
		t.Error("EnvVars accepted two keys with one variable")
	}
}
