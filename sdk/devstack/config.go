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

// common returns the keys every process has, for the process called name
// and its identity: its own key folder, metrics and plaintext health
// listeners, and tracing when asked for.
func (s *Stack) common(name, identity string) map[string]any {
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
func (s *Stack) sidecar(p member, own map[string]any) map[string]any {
	m := s.common(p.name, p.identity)
	m["listen"], m["kernel"], m["kernel_timeout"] = s.listen(p.name, "grpc"), s.kernels(func(k KernelAddrs) string { return k.Adapter }), "3s"
	for k, v := range own {
		m[k] = v
	}
	return m
}

// writeConfig writes the configuration of one of the stack's processes,
// with the same keys a deployment would use.
func (s *Stack) writeConfig(p member) error {
	var cfg map[string]any
	switch p.kind {
	case Kernel:
		cfg = s.common(p.name, p.identity)
		cfg["database"] = s.KernelDB
		cfg["checkpoints"] = map[string]any{"dir": s.CheckpointDir(p.name)}
		cfg["durability"] = s.opts.Durability
		cfg["capability_ttl"] = s.opts.CapabilityTTL.String()
		cfg["listen"] = map[string]string{
			"agent": s.listen(p.name, "agent"), "adapter": s.listen(p.name, "adapter"), "governance": s.listen(p.name, "governance"),
		}
		peers := map[string]any{}
		serves := map[string]string{}
		for _, m := range s.members {
			if m.kind == Kernel || m.kind == MCP {
				continue
			}
			ids, _ := peers[m.kind].([]string)
			peers[m.kind] = append(ids, m.identity)
			if m.agent != "" {
				serves[m.identity] = m.agent
			}
		}
		if len(serves) > 0 {
			peers["serves"] = serves
		}
		cfg["peers"] = peers
		cfg["promotion_authorities"] = map[string][]string{
			"SCOPE_TASK": {PolicyOwner}, "SCOPE_WORKSPACE": {PolicyOwner}, "SCOPE_ORGANISATION": {PolicyOwner},
		}
	case Evidence:
		own := map[string]any{"sources": s.sections.sources}
		if s.opts.WatchInterval > 0 {
			own["watch_interval"] = s.opts.WatchInterval.String()
		}
		cfg = s.sidecar(p, own)
	case Action:
		own := map[string]any{"kernel_key": Kernel, "database": s.actionDB(p), "durability": s.opts.Durability, "executors": s.sections.executors}
		if len(s.sections.stateChecks) > 0 {
			own["state_checks"] = s.sections.stateChecks
		}
		cfg = s.sidecar(p, own)
	case Verifier:
		cfg = s.sidecar(p, map[string]any{"kernel_key": Kernel, "action_key": s.sidecarOf(Action, p.agent), "readbacks": s.sections.readbacks})
	case MCP:
		// The gateway acts as the agent, with the agent's key folder, on
		// the agent's own sidecars; it serves no gRPC, so it has no
		// reflection and no health listener.
		cfg = s.common(p.name, p.identity)
		delete(cfg, "reflection")
		delete(cfg, "health_listen")
		own := s.Sidecars[p.agent]
		cfg["kernel"], cfg["evidence"], cfg["action"], cfg["verifier"] = s.kernels(func(k KernelAddrs) string { return k.Agent }), own.Evidence, own.Action, own.Verifier
		cfg["task_id"], cfg["purpose"] = own.Task, s.opts.Purpose
		cfg["listen"] = hostPort(s.listen(p.name, MCP))
	}
	return config.Write(s.ConfigPath(p.name), cfg)
}

// actionDB is an action adapter's own database of idempotency keys: the
// one the examples name (default data/action.db), or beside it, named
// after the adapter, for an agent's own (data/action-agent-2.db).
func (s *Stack) actionDB(p member) string {
	db := s.sections.actionDB
	if db == "" {
		db = filepath.Join(s.DataDir, "action.db")
	}
	if p.agent == "" {
		return db
	}
	return filepath.Join(filepath.Dir(db), p.name+".db")
}

// Defaults of [Options].
const (
	DefaultCapabilityTTL = 5 * time.Minute
	DefaultDurability    = "full"
	DefaultLogLevel      = "info"
)
