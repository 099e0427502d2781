package version

import (
	"runtime/debug"
	"strings"
)

// Version is the release, set at link time; empty: taken from the build
// information.
var Version string

// String is the --version line of program: its version, the Go version it
// was built with and, when the build recorded it, the VCS revision.
func String(program string) string {
	info, ok := debug.ReadBuildInfo()
	return format(program, Version, info, ok)
}

func format(program, linked string, info *debug.BuildInfo, ok bool) string {
	v, goVersion := linked, "unknown Go"
	if ok {
		goVersion = info.GoVersion
		if v == "" {
			v = info.Main.Version
		}
	}
	if v == "" {
		v = "(unknown)"
	}
	parts := []string{program, v, goVersion}
	if ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if rev != "" {
			parts = append(parts, "revision "+rev+dirty)
		}
	}
	return strings.Join(parts, " ")
}
