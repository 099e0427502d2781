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

// Dial connects as identity, with the certificate and key in pkiDir, to
// the kernel's agent listener and the three adapters.
func Dial(ctx context.Context, pkiDir, identity string, addr Addresses) (*Agent, error) {
	tlsCfg, err := pki.ClientTLS(pkiDir, identity)
	if err != nil {
		return nil, err
	}
	var conns []*grpc.ClientConn
	closeAll := func() error {
		var errs []error
		for _, c := range conns {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	dial := func(a string) (*grpc.ClientConn, error) {
		c, err := serve.Dial(ctx, a, tlsCfg)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	var c Conns
	for _, d := range []struct {
		addr string
		into *grpc.ClientConnInterface
	}{{addr.Kernel, &c.Kernel}, {addr.Evidence, &c.Evidence}, {addr.Action, &c.Action}, {addr.Verifier, &c.Verifier}} {
		conn, err := dial(d.addr)
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
