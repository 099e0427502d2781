// Package serve runs a gRPC server the same way in every Ambit binary:
// mutual TLS, hardened transport limits, default-deny role authorisation,
// panic recovery, error hygiene, health, and graceful shutdown.
//
// Entry points:
//
//   - [NewLogger] builds the JSON production logger every binary uses.
//   - [NewServer] builds a [Server]: a *grpc.Server whose interceptors log
//     one line per call and recover panics (go-grpc-middleware's logging
//     and recovery), authenticate the peer with [pki.PeerFromContext],
//     authorise its role against a [Policy] (a method not listed is
//     denied), and map errors to statuses in one place: a status passes,
//     storage that cannot take a write ([StorageUnavailable]) is
//     Unavailable, anything else Internal, with the cause logged once and
//     kept off the wire. A request that does not decode is
//     InvalidArgument. The gRPC health service is registered and, with
//     [WithReflection], server reflection; [WithInterceptors] and
//     [WithStatsHandler] add metrics and tracing. Register services with
//     [Server.RegisterService] (pass the Server to the generated
//     RegisterXServer).
//   - [Caller] returns, inside a handler, the authenticated [pki.Identity].
//   - [Run] binds one or more [Listener]s, reports the bound addresses, serves
//     until its context is cancelled, then drains: health NOT_SERVING,
//     GracefulStop, and Stop once the grace period has passed.
//   - [WriteAddrFile] records the bound addresses for tests and tools.
//   - [Dial] opens a client connection with mutual TLS and keepalive.
//
// Servers and clients alike use fixed flow-control windows: gRPC's
// bandwidth estimator would otherwise ping the peer on nearly every call
// made one at a time.
//
// A binary wires them like this:
//
//	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	srv := serve.NewServer(log, tlsCfg, policy)
//	kernelv1.RegisterKernelServiceServer(srv, handler)
//	if err := srv.CheckPolicy(); err != nil { … }
//	return serve.Run(ctx, log, 10*time.Second, ready, serve.Listener{Name: "grpc", Addr: addr, Server: srv})
package serve
