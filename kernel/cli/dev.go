package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// names collects a repeatable flag's values.
type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }
func (n *names) Type() string       { return "NAME" }

var (
	_ flag.Value  = (*names)(nil)
	_ pflag.Value = (*names)(nil)
)

func devInitCmd(env *Env) *cobra.Command {
	cmd := leaf("init DIR", "create a local CA and a key folder per process in DIR (--agent NAME adds an agent)")
	var agents names
	cmd.Flags().Var(&agents, "agent", "add an agent identity `NAME` to an existing (or new) PKI instead of the defaults; repeatable")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return runDevInit(env, agents, args) }
	return cmd
}

func runDevInit(env *Env, agents names, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: dev init [--agent NAME]... DIR", ErrUsage)
	}
	root := args[0]
	ids := pki.DefaultIdentities()
	if len(agents) > 0 {
		ids = nil
		for _, name := range agents {
			ids = append(ids, pki.Identity{Name: name, Role: pki.RoleAgent})
		}
	}
	if err := pki.DevInit(root, ids); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "dev PKI in %s (the CA in %s; give each process only its own folder as pki_dir):\n", root, pki.CADir(root))
	for _, id := range ids {
		fmt.Fprintf(env.Stdout, "  %-14s role %-16s %s\n", id.Name, id.Role, pki.IdentityDir(root, id.Name))
	}
	return nil
}

func runDevUp(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "dev up")
	bin := fs.String("bin", "", "`folder` holding the ambit binaries and the examples' programs (default: ambitctl's own folder)")
	var examples names
	fs.Var(&examples, "example", "enable the example whose manifest is `PATH` (example.yaml or its folder); repeatable (default: every example under the bin folder's ../examples)")
	agents := fs.Int("agents", 1, "how many agent identities to create: agent, agent-2, …")
	sidecars := fs.String("sidecars", "", "`topology` of the sidecars: shared (one evidence adapter, action adapter and verifier for every agent) or per-agent (each agent its own, and its own ambit-mcp, each with its own identity); default per-agent with more than one agent, else shared")
	purpose := fs.String("purpose", "", "with --sidecars per-agent, the `purpose` the agents' gateways serve (default: the first example's contract's)")
	database := fs.String("database", "", "the kernel's database: an SQLite file (default DIR/kernel.db) or a postgres:// `URL`")
	replicas := fs.Int("kernel-replicas", 1, "how many kernel processes share the database (more than one needs --database postgres://…)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: dev up DIR [--bin DIR] [--example PATH]... [--agents N] [--sidecars shared|per-agent [--purpose P]] [--database URL [--kernel-replicas N]]", ErrUsage)
	}
	if *agents < 1 {
		return fmt.Errorf("%w: --agents must be at least 1", ErrUsage)
	}
	if *replicas < 1 {
		return fmt.Errorf("%w: --kernel-replicas must be at least 1", ErrUsage)
	}
	topology := devstack.Topology(*sidecars)
	if topology == "" {
		// Several agents each get their own sidecars unless asked
		// otherwise: one agent's sidecars must not serve another.
		topology = devstack.SharedSidecars
		if *agents > 1 {
			topology = devstack.PerAgentSidecars
		}
	}
	if topology != devstack.SharedSidecars && topology != devstack.PerAgentSidecars {
		return fmt.Errorf("%w: --sidecars must be %s or %s, not %q", ErrUsage, devstack.SharedSidecars, devstack.PerAgentSidecars, *sidecars)
	}
	if *purpose != "" && topology != devstack.PerAgentSidecars {
		return fmt.Errorf("%w: --purpose is for the gateways of --sidecars per-agent", ErrUsage)
	}
	if *bin == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the bin folder (give --bin): %w", err)
		}
		*bin = filepath.Dir(self)
	}
	if len(examples) == 0 {
		dir := filepath.Join(filepath.Dir(*bin), "examples")
		found, err := devstack.FindExamples(dir)
		if err != nil || len(found) == 0 {
			return fmt.Errorf("no example found under %s (%v): give --example PATH", dir, err)
		}
		examples = found
	}
	fmt.Fprintf(env.Stdout, "starting the stack in %s (binaries from %s; examples: %s)\n", fs.Arg(0), *bin, strings.Join(examples, ", "))
	s, err := devstack.Start(ctx, devstack.Options{Dir: fs.Arg(0), BinDir: *bin, Examples: examples, Agents: *agents,
		Sidecars: topology, Purpose: *purpose, Database: *database, KernelReplicas: *replicas})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "kernel: agent %s, adapter %s, governance %s\n", s.Kernel.Agent, s.Kernel.Adapter, s.Kernel.Governance)
	for i, k := range s.KernelReplicas[min(1, len(s.KernelReplicas)):] {
		fmt.Fprintf(env.Stdout, "kernel replica %d: agent %s, adapter %s, governance %s\n", i+2, k.Agent, k.Adapter, k.Governance)
	}
	if topology == devstack.PerAgentSidecars {
		for _, a := range s.Agents {
			own := s.Sidecars[a]
			fmt.Fprintf(env.Stdout, "%s: evidence %s, action %s, verifier %s, mcp %s (task %s)\n", a, own.Evidence, own.Action, own.Verifier, own.MCP, own.Task)
		}
	} else {
		fmt.Fprintf(env.Stdout, "evidence %s, action %s, verifier %s\n", s.Info.Evidence, s.Info.Action, s.Info.Verifier)
	}
	fmt.Fprintf(env.Stdout, "agents %s; configurations in %s; key folders in %s; logs in %s\n",
		strings.Join(s.Agents, ", "), s.Dir, s.PKI, filepath.Dir(s.LogPath(devstack.Kernel)))
	fmt.Fprintf(env.Stdout, "stack: %s\nrunning until SIGINT or SIGTERM\n", s.InfoPath())
	var died error
	select {
	case <-ctx.Done():
	case name := <-s.Died():
		died = fmt.Errorf("%s exited on its own; see %s", name, s.LogPath(name))
	}
	fmt.Fprintln(env.Stdout, "stopping")
	if err := errors.Join(died, s.Stop()); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, "every process stopped cleanly")
	return nil
}
