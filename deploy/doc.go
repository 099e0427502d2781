// Package deploy holds what running Ambit outside the repository needs:
// an example configuration with every key for the kernel and each
// sidecar, a systemd unit and a Containerfile per binary, and config.md,
// the reference of every configuration key.
//
// config.md is generated from the configuration structs by [Reference]:
// the keys and their types from the json tags, the defaults from what
// ApplyDefaults sets, the meanings from the fields' comments. Regenerate it
// with go generate ./deploy; the tests fail when it is out of step, and
// when an example does not load or misses a key.
package deploy

//go:generate go run ./cmd/configref
