package cli

import (
	"context"
	"fmt"

	"github.com/ambitkernel/ambit/sdk/pki"
)

func runDevInit(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "dev init")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: dev init DIR", ErrUsage)
	}
	dir := fs.Arg(0)
	ids := pki.DefaultIdentities()
	if err := pki.DevInit(dir, ids); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "dev CA, certificates and signing keys in %s:\n", dir)
	for _, id := range ids {
		fmt.Fprintf(env.Stdout, "  %-14s role %s\n", id.Name, id.Role)
	}
	return nil
}
