package devstack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// InfoFile is the name of the file in the stack's folder that describes
// the running stack, for clients in any language.
const InfoFile = "stack.json"

// Info is what stack.json holds:
//
//	{"pki": "DIR/pki",
//	 "kernel": {"agent": "127.0.0.1:…", "adapter": "…", "governance": "…"},
//	 "evidence": "…", "action": "…", "verifier": "…",
//	 "agents": ["agent"], "governance": ["governance", "policy-owner"],
//	 "sidecars": {"agent": {"evidence": "…", "action": "…", "verifier": "…",
//	              "mcp": "http://…/mcp", "task": "task-agent", "identities": {…}}},  (per-agent only)
//	 "examples": {"<name>": {"DATA": "…", "DIR": "…", …}},
//	 "processes": {"kernel": {"pid": …, "log": "…", "config": "…"}, …}}
//
// An identity's key folder is pki/<identity>. The examples map each
// enabled example to the values its files' placeholders were given.
type Info struct {
	PKI    string      `json:"pki"`
	Kernel KernelAddrs `json:"kernel"`
	// KernelReplicas lists every replica's listeners, the first being
	// Kernel, when more than one kernel shares the database.
	KernelReplicas []KernelAddrs `json:"kernel_replicas,omitempty"`
	Evidence       string        `json:"evidence"`
	Action         string        `json:"action"`
	Verifier       string        `json:"verifier"`
	Agents         []string      `json:"agents"`
	Governance     []string      `json:"governance"`
	// Sidecars are, in the per-agent topology, each agent's own sidecars
	// by agent; evidence, action and verifier above are then the first
	// agent's. Absent in the shared topology.
	Sidecars map[string]AgentSidecars `json:"sidecars,omitempty"`
	// Examples holds each example's placeholder values.
	Examples map[string]map[string]string `json:"examples"`
	// Processes describes every running process: the four and the
	// examples' servers.
	Processes map[string]ProcessInfo `json:"processes"`
}

// KernelAddrs are the kernel's three listeners.
type KernelAddrs struct {
	Agent      string `json:"agent"`
	Adapter    string `json:"adapter"`
	Governance string `json:"governance"`
}

// ProcessInfo describes one running process.
type ProcessInfo struct {
	PID int `json:"pid"`
	// Log is where its output goes; Config its configuration file (the
	// four processes only).
	Log    string `json:"log"`
	Config string `json:"config,omitempty"`
}

func (s *Stack) setProcessInfo(name string, p *proc, config string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Processes[name] = ProcessInfo{PID: p.cmd.Process.Pid, Log: s.LogPath(name), Config: config}
}

// writeInfo writes stack.json atomically: a reader polling for it sees no
// file or the whole file.
func (s *Stack) writeInfo() error {
	s.mu.Lock()
	data, err := json.MarshalIndent(s.Info, "", "  ")
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	tmp, err := os.CreateTemp(s.Dir, "."+InfoFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(s.Dir, InfoFile))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("devstack: write %s: %w", InfoFile, werr)
	}
	return nil
}

// ReadInfo reads a stack.json.
func ReadInfo(path string) (Info, error) {
	var info Info
	data, err := os.ReadFile(path)
	if err != nil {
		return info, fmt.Errorf("read stack: %w", err)
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("read stack %s: %w", path, err)
	}
	return info, nil
}
