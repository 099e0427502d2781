package deploy_test

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/ambitkernel/ambit/adapters/action"
	"github.com/ambitkernel/ambit/adapters/evidence"
	"github.com/ambitkernel/ambit/adapters/gateway"
	"github.com/ambitkernel/ambit/deploy"
	"github.com/ambitkernel/ambit/kernel/server"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/verifier/verify"
)

// TestPerAgentTopology: the per-agent examples fit together. Each of
// agent-2's sidecars has an identity and key folder of its own, which the
// kernel trusts and binds to agent-2; the verifier trusts agent-2's action
// adapter alone; the gateway acts as agent-2 on its own task and talks to
// agent-2's sidecars.
func TestPerAgentTopology(t *testing.T) {
	const agent = "agent-2"
	path := func(binary string) string { return filepath.Join(deploy.PerAgentDir, deploy.PerAgent()[binary]) }
	kernel, err := config.LoadAs[server.Config](path("ambit-kernel"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.LoadConfig(path("ambit-evidence"))
	if err != nil {
		t.Fatal(err)
	}
	act, err := action.LoadConfig(path("ambit-action"))
	if err != nil {
		t.Fatal(err)
	}
	ver, err := verify.LoadConfig(path("ambit-verifier"))
	if err != nil {
		t.Fatal(err)
	}
	mcp, err := config.LoadAs[gateway.Config](path("ambit-mcp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		identity, pkiDir string
		peers            []string
	}{
		{ev.Identity, ev.PKIDir, kernel.Peers.Evidence},
		{act.Identity, act.PKIDir, kernel.Peers.Action},
		{ver.Identity, ver.PKIDir, kernel.Peers.Verifier},
	} {
		if kernel.Peers.Serves[s.identity] != agent {
			t.Errorf("the kernel binds %s to %q, want %s", s.identity, kernel.Peers.Serves[s.identity], agent)
		}
		if filepath.Base(s.pkiDir) != s.identity {
			t.Errorf("%s's key folder is %s, not its own", s.identity, s.pkiDir)
		}
		found := false
		for _, p := range s.peers {
			found = found || p == s.identity
		}
		if !found {
			t.Errorf("the kernel does not trust %s's key: peers %v", s.identity, s.peers)
		}
	}
	if ev.Identity == act.Identity || act.Identity == ver.Identity {
		t.Errorf("sidecars share an identity: %s, %s, %s", ev.Identity, act.Identity, ver.Identity)
	}
	if ver.ActionKey != act.Identity {
		t.Errorf("the verifier trusts effect receipts of %s, not of agent-2's action adapter %s", ver.ActionKey, act.Identity)
	}
	if mcp.Identity != agent || filepath.Base(mcp.PKIDir) != agent {
		t.Errorf("the gateway acts as %s with %s, want %s", mcp.Identity, mcp.PKIDir, agent)
	}
	if mcp.Evidence != ev.Listen || mcp.Action != act.Listen || mcp.Verifier != ver.Listen {
		t.Errorf("the gateway talks to %s, %s, %s; agent-2's sidecars listen on %s, %s, %s",
			mcp.Evidence, mcp.Action, mcp.Verifier, ev.Listen, act.Listen, ver.Listen)
	}
	if port(t, mcp.Kernel) != port(t, kernel.Listen.Agent) {
		t.Errorf("the gateway calls the kernel at %s, not its agent listener %s", mcp.Kernel, kernel.Listen.Agent)
	}
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
