package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/ambitkernel/ambit/sdk/pki"
)

// names collects a repeatable flag's values.
type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

var _ flag.Value = (*names)(nil)

func runDevInit(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "dev init")
	var agents names
	fs.Var(&agents, "agent", "add an agent identity `NAME` to an existing (or new) PKI instead of the defaults; repeatable")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: dev init [--agent NAME]... DIR", ErrUsage)
	}
	root := fs.Arg(0)
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
