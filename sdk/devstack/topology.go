package devstack

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/ambitkernel/ambit/sdk/pki"
)

// Topology says which sidecars run beside the stack's one kernel.
type Topology string

const (
	// SharedSidecars: one evidence adapter, action adapter and verifier
	// serve every agent (the default).
	SharedSidecars Topology = "shared"
	// PerAgentSidecars: each agent has its own evidence adapter, action
	// adapter, verifier and MCP gateway (ambit-mcp over streamable HTTP on
	// loopback). Each sidecar has an identity of its own ([SidecarName]),
	// which the kernel's peers.serves binds to the agent; the gateway acts
	// as the agent, with the agent's identity, on the agent's task
	// ([TaskName]).
	PerAgentSidecars Topology = "per-agent"
)

// MCP is the kind of an agent's MCP gateway, ambit-mcp, in the per-agent
// topology; Evidence, Action and Verifier are the other sidecars' kinds.
const MCP = "mcp"

// SidecarName is the name — identity, process and configuration file —
// of an agent's own sidecar of a kind in the per-agent topology:
// evidence-agent-2, action-agent-2, verifier-agent-2, mcp-agent-2.
func SidecarName(kind, agent string) string { return kind + "-" + agent }

// TaskName is the task an agent's gateway serves in the per-agent
// topology: governance binds it to a contract for the agent.
func TaskName(agent string) string { return "task-" + agent }

// member is one of the stack's own processes (not an example's server).
type member struct {
	// name is the process's name: its configuration, log and address
	// file are named after it.
	name string
	// kind is Kernel, Evidence, Action, Verifier or MCP.
	kind string
	// identity is the name of its key folder: its own, or the agent's for
	// a gateway.
	identity string
	// agent is the agent a per-agent sidecar serves; empty when shared.
	agent string
}

// members are a topology's processes, in start order: the kernel
// replicas, then each sidecar after those it depends on.
func members(t Topology, agents []string, replicas int) []member {
	var out []member
	for i := 1; i <= max(replicas, 1); i++ {
		out = append(out, member{name: KernelReplica(i), kind: Kernel, identity: Kernel})
	}
	if t != PerAgentSidecars {
		return append(out, member{name: Evidence, kind: Evidence, identity: Evidence},
			member{name: Action, kind: Action, identity: Action}, member{name: Verifier, kind: Verifier, identity: Verifier})
	}
	for _, a := range agents {
		for _, kind := range []string{Evidence, Action, Verifier} {
			out = append(out, member{name: SidecarName(kind, a), kind: kind, identity: SidecarName(kind, a), agent: a})
		}
		out = append(out, member{name: SidecarName(MCP, a), kind: MCP, identity: a, agent: a})
	}
	return out
}

// roles are the PKI roles of the members' kinds; a gateway has the
// agent's identity and no role of its own.
var roles = map[string]pki.Role{Kernel: pki.RoleKernel, Evidence: pki.RoleEvidence, Action: pki.RoleAction, Verifier: pki.RoleVerifier}

// AgentSidecars are one agent's own sidecars in the per-agent topology.
type AgentSidecars struct {
	// Evidence, Action and Verifier are the gRPC addresses of the agent's
	// evidence adapter, action adapter and verifier.
	Evidence string `json:"evidence"`
	Action   string `json:"action"`
	Verifier string `json:"verifier"`
	// MCP is the URL of the agent's ambit-mcp (streamable HTTP).
	MCP string `json:"mcp"`
	// Task is the task the gateway serves ([TaskName]).
	Task string `json:"task"`
	// Identities are the sidecars' names, by kind ("evidence", "action",
	// "verifier"; "mcp" acts as the agent).
	Identities map[string]string `json:"identities"`
}

// member returns the member called name.
func (s *Stack) member(name string) (member, bool) {
	for _, m := range s.members {
		if m.name == name {
			return m, true
		}
	}
	return member{}, false
}

// sidecarOf is the name of the process of a kind serving agent: the
// agent's own in the per-agent topology, the shared one otherwise.
func (s *Stack) sidecarOf(kind, agent string) string {
	if s.opts.Sidecars == PerAgentSidecars {
		return SidecarName(kind, agent)
	}
	return kind
}

// hostPort is the host:port of a listener's address, which for the
// gateway's endpoint is a URL.
func hostPort(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Host
	}
	return addr
}

// contractPurpose reads binding.purpose from an example's contract
// template, the purpose the gateways serve when none is given.
func contractPurpose(e *Example) (string, error) {
	if e.Files.Contract == "" {
		return "", fmt.Errorf("example %s has no contract", e.Name)
	}
	data, err := os.ReadFile(e.Path(e.Files.Contract))
	if err != nil {
		return "", fmt.Errorf("example %s: %w", e.Name, err)
	}
	// Only the purpose matters here; the kernel reads the contract
	// strictly when governance proposes it.
	var c struct {
		Binding struct {
			Purpose string `yaml:"purpose"`
		} `yaml:"binding"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("example %s: %s: %w", e.Name, filepath.Base(e.Files.Contract), err)
	}
	if c.Binding.Purpose == "" {
		return "", fmt.Errorf("example %s: %s names no binding.purpose", e.Name, e.Files.Contract)
	}
	return c.Binding.Purpose, nil
}
