// Package serve runs a gRPC server the same way in every Ambit binary:
// mutual TLS, hardened transport limits, default-deny role authorisation,
// panic recovery, error hygiene, health, and graceful shutdown.
//
// Entry points:
//
//   - [NewLogger] builds the JSON production logger every binary uses.
//   - [NewServer] builds a [Server]: a *grpc.Server whose interceptors
//     authenticate the peer with [pki.PeerFromContext], authorise its role
//     against a [Policy] (a method not listed is denied), recover panics and
//     keep internal error causes off the wire (they are logged once,
//     instead), plus the gRPC health service and, with [WithReflection],
//     server reflection.
//   - [Caller] returns, inside a handler, the authenticated [pki.Identity].
//   - [Run] binds one or more [Listener]s, reports the bound addresses, serves
//     until its context is cancelled, then drains: health NOT_SERVING,
//     GracefulStop, and Stop once the grace period has passed.
//   - [WriteAddrFile] records the bound addresses for tests and tools.
//   - [Dial] opens a client connection with mutual TLS and keepalive.
//
// A binary wires them like this:
//
//	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	srv := serve.NewServer(log, tlsCfg, policy)
//	kernelv1.RegisterKernelServiceServer(srv.GRPC, handler)
//	if err := srv.CheckPolicy(); err != nil { … }
//	return serve.Run(ctx, log, 10*time.Second, ready, serve.Listener{Name: "grpc", Addr: addr, Server: srv})
package serve
