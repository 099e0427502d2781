package devstack

import (
	"path/filepath"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/pki"
)

// anyPort asks the operating system for a free loopback port.
const anyPort = "127.0.0.1:0"

// listen is a listener's address: the one it was bound to before, so that
// a restarted process keeps its addresses and its clients reconnect, or
// any free port.
func (s *Stack) listen(name, listener string) string {
	if a := s.bound[name][listener]; a != "" {
		return a
	}
	return anyPort
}

// common returns the keys every process has, for the process (and
// identity) called name: its own key folder, metrics and plaintext health
// listeners, and tracing when asked for.
func (s *Stack) common(name string) map[string]any {
	identity := name
	if isKernel(name) {
		identity = Kernel // every replica is the kernel
	}
	m := map[string]any{
		"identity":        identity,
		"pki_dir":         pki.IdentityDir(s.PKI, identity),
		"log_level":       s.opts.LogLevel,
		"shutdown_grace":  "5s",
		"reflection":      true,
		"metrics":         s.listen(name, "metrics"),
		"health_listen":   s.listen(name, "health"),
		"health_interval": "200ms",
	}
	if s.opts.Tracing {
		m["tracing"], m["tracing_file"] = "file", s.TracePath(name)
	}
	return m
}

// sidecar returns the keys of a sidecar: the common ones, its listener and
// the kernel's adapter listener, and its own.
func (s *Stack) sidecar(name string, own map[string]any) map[string]any {
	m := s.common(name)
	m["listen"], m["kernel"], m["kernel_timeout"] = s.listen(name, "grpc"), s.kernels(func(k KernelAddrs) string { return k.Adapter }), "3s"
	for k, v := range own {
		m[k] = v
	}
	return m
}

// writeConfig writes the configuration of one of the four processes, with
// the same keys a deployment would use.
func (s *Stack) writeConfig(name string) error {
	var cfg map[string]any
	switch {
	case isKernel(name):
		cfg = s.common(name)
		cfg["database"] = s.KernelDB
		if dir := s.CheckpointDir(name); dir != s.KernelDB+".checkpoints" {
			cfg["checkpoints"] = map[string]any{"dir": dir}
		}
		cfg["durability"] = s.opts.Durability
		cfg["capability_ttl"] = s.opts.CapabilityTTL.String()
		cfg["listen"] = map[string]string{
			"agent": s.listen(name, "agent"), "adapter": s.listen(name, "adapter"), "governance": s.listen(name, "governance"),
		}
		cfg["peers"] = map[string][]string{"evidence": {Evidence}, "action": {Action}, "verifier": {Verifier}}
		cfg["promotion_authorities"] = map[string][]string{
			"SCOPE_TASK": {PolicyOwner}, "SCOPE_WORKSPACE": {PolicyOwner}, "SCOPE_ORGANISATION": {PolicyOwner},
		}
	case name == Evidence:
		own := map[string]any{"sources": s.sections.sources}
		if s.opts.WatchInterval > 0 {
			own["watch_interval"] = s.opts.WatchInterval.String()
		}
		cfg = s.sidecar(Evidence, own)
	case name == Action:
		db := s.sections.actionDB
		if db == "" {
			db = filepath.Join(s.DataDir, "action.db")
		}
		own := map[string]any{"kernel_key": Kernel, "database": db, "executors": s.sections.executors}
		if len(s.sections.stateChecks) > 0 {
			own["state_checks"] = s.sections.stateChecks
		}
		cfg = s.sidecar(Action, own)
	case name == Verifier:
		cfg = s.sidecar(Verifier, map[string]any{"kernel_key": Kernel, "action_key": Action, "readbacks": s.sections.readbacks})
	}
	return config.Write(s.ConfigPath(name), cfg)
}

// Defaults of [Options].
const (
	DefaultCapabilityTTL = 5 * time.Minute
	DefaultDurability    = "full"
	DefaultLogLevel      = "info"
)
