package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		ok     bool
		want   string
	}{
		{"linked version wins", "v1.2.0", info, true, "ambit-kernel v1.2.0 go1.26.8 revision abc123+dirty"},
		{"module version", "", info, true, "ambit-kernel (devel) go1.26.8 revision abc123+dirty"},
		{"no revision", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}}, true, "ambit-kernel v0.3.0 go1.26.8"},
		{"no build information", "", nil, false, "ambit-kernel (unknown) unknown Go"},
	}
	for _, tt := range tests {
		if got := format("ambit-kernel", tt.linked, tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := String("x"); !strings.HasPrefix(got, "x ") {
		t.Errorf("String = %q", got)
	}
}
