package client

import (
	"context"
	"errors"

	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"google.golang.org/grpc"
)

// Addresses are where the agent's processes listen.
type Addresses struct {
	Kernel, Evidence, Action, Verifier string
}

// Dial connects as identity, with its own key folder (as `ambitctl dev
// init` lays it out: DIR/<identity>), to the kernel's agent listener and
// the three adapters, checking that each server carries the role it must.
func Dial(ctx context.Context, identityDir, identity string, addr Addresses) (*Agent, error) {
	var conns []*grpc.ClientConn
	closeAll := func() error {
		var errs []error
		for _, c := range conns {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	dial := func(a string, role pki.Role) (*grpc.ClientConn, error) {
		tlsCfg, err := pki.ClientTLS(identityDir, identity, pki.Expect{Role: role})
		if err != nil {
			return nil, err
		}
		c, err := serve.Dial(ctx, a, tlsCfg)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	var c Conns
	for _, d := range []struct {
		addr string
		role pki.Role
		into *grpc.ClientConnInterface
	}{{addr.Kernel, pki.RoleKernel, &c.Kernel}, {addr.Evidence, pki.RoleEvidence, &c.Evidence},
		{addr.Action, pki.RoleAction, &c.Action}, {addr.Verifier, pki.RoleVerifier, &c.Verifier}} {
		conn, err := dial(d.addr, d.role)
		if err != nil {
			_ = closeAll()
			return nil, err
		}
		*d.into = conn
	}
	a := New(c)
	a.close = closeAll
	return a, nil
}
