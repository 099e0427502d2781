// Package service is the frame every single-listener Ambit service shares:
// the evidence adapter, the action adapter and the readback verifier. Each
// serves one gRPC listener, calls the kernel and signs receipts; this
// package holds everything about that which is not the service's own
// logic, so each binary's start-up is a short wiring script.
//
// Entry points:
//
//   - [Config] holds the configuration keys every service has (identity,
//     pki_dir, listen, addr_file, kernel, kernel_timeout, log_level,
//     shutdown_grace, reflection), with their defaults and checks. A
//     service's configuration embeds it inline and is a [File].
//   - [Main] is a service's program up to its own wiring: [ParseFlags]
//     (--config, --listen, --addr-file), [Load] (strict file, defaults,
//     validation, flag overrides), the logger and [Start], which returns a
//     [Process]: TLS, receipt signer, the kernel connection and the server.
//     [Process.Serve] serves the one listener ([ListenerName]) and writes
//     its address file.
//   - [Statuses] is a service's table from errors to gRPC statuses and
//     their reasons ([Rule]), with kernel refusals passed through; every
//     refusal carries a google.rpc.ErrorInfo naming an
//     ambit.error.v1.ErrorReason ([Error]; [Reason] reads it back).
//     [Handle] is the request flow of a handler (validate, call the core
//     as the caller, map the error).
//   - [Issuer] is what every service's core needs to issue signed receipts
//     (identity, signer, clock, identifiers, logger); [NewID] returns the
//     random part of an identifier a service issues.
//
// A service wires them like this:
//
//	func Run(ctx context.Context, args []string, stdout io.Writer) error {
//		var cfg Config // embeds service.Config
//		return service.Main(ctx, "ambit-x", args, stdout, &cfg, Policy(), func(ctx context.Context, p *service.Process) error {
//			core, err := NewCore(Deps{Issuer: p.Issuer(), Kernel: kernelv1.NewAdapterServiceClient(p.Kernel), …})
//			if err != nil {
//				return err
//			}
//			xv1.RegisterXServiceServer(p.Server.GRPC, NewHandler(core))
//			return p.Serve(ctx)
//		})
//	}
package service
