// Package version names the build of an Ambit binary for --version.
//
// [Version] may be set at link time
// (-ldflags "-X github.com/ambitkernel/ambit/sdk/version.Version=v1.2.0");
// otherwise the main module's version from the build information is used.
// [String] is the line every binary prints.
package version
