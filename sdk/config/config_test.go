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
	for body, want := range map[string]string{"timeout: 2s\n": "name is required", "name: x\nnmae: y\n": "nmae"} {
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
