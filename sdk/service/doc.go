// Package service is the process frame every Ambit process shares: the
// kernel (three listeners) and the sidecars (the evidence adapter, the
// action adapter and the readback verifier: one listener each, calling the
// kernel). It holds everything about running a process that is not the
// process's own logic, so each binary's start-up is a short wiring script.
//
// Entry points:
//
//   - [Common] holds the configuration keys every process has (identity,
//     pki_dir, addr_file, log_level, shutdown_grace, reflection, metrics,
//     health_listen, health_interval, tracing, tracing_file,
//     gc_headroom_mb); [Config] adds a sidecar's (listen, kernel,
//     kernel_server_name, kernel_timeout).
//     A process's configuration embeds one of them inline and is a [File];
//     every key can be overridden by an AMBIT_<KEY> environment variable.
//   - [Main] is a process's program up to its own wiring: flags
//     ([ParseFlags]: --config, --addr-file, --listen, --version, --help),
//     configuration ([Load]), logger, the collector's pacing ([PaceGC]:
//     gc_headroom_mb, unless GOGC is set), and [Start], which returns a
//     [Process]: its identity (whose certificate must carry the process's
//     role and is reloaded when it changes on disk), receipt signer,
//     Prometheus registry and tracing. [Process.NewServer] builds a server
//     per listener, [Process.Dial] a connection that requires the server's
//     role, [Process.Check] adds a dependency to the process's health, and
//     [Process.Serve] serves every listener, plus the metrics and plaintext
//     health listeners when configured, and writes the address file.
//   - [MainSidecar] and [Sidecar] are the same for a sidecar: its kernel
//     connection, its one listener ([ListenerName]) and the kernel's health
//     as its own.
//   - [Statuses] is a service's table from errors to gRPC statuses and
//     their reasons ([Rule]), with kernel refusals passed through; every
//     refusal carries a google.rpc.ErrorInfo naming an
//     ambit.error.v1.ErrorReason ([serve.Error]; [serve.Reason] reads it back), and
//     [Statuses.Validate] checks a table names one for every rule.
//     [Handle] is the request flow of a handler (validate, call the core
//     as the caller, map the error).
//   - [Failpoints], for crash tests: the environment variable
//     AMBIT_FAILPOINT ([FailpointEnv]) arms points at which the process
//     kills itself with SIGKILL — the frame's own at the edges of every
//     call ("reply:<Method>" once a served call succeeded and before it is
//     answered, "call:<Method>" before an outgoing call, "answer:<Method>"
//     once it succeeded and before its answer is used) and a process's own,
//     claimed with [Process.Failpoint]. Unset, nothing is installed.
//   - [Issuer] is what every service's core needs to issue signed receipts
//     (identity, signer, clock, identifiers, logger); [NewID] returns the
//     part after the prefix of an identifier a service issues.
//
// A sidecar wires them like this:
//
//	func Run(ctx context.Context, args []string, stdout io.Writer) error {
//		var cfg Config // embeds service.Config
//		return service.MainSidecar(ctx, "ambit-x", pki.RoleX, args, stdout, &cfg, Policy(), func(ctx context.Context, s *service.Sidecar) error {
//			core, err := NewCore(Deps{Issuer: s.Issuer(), Kernel: kernelv1.NewAdapterServiceClient(s.Kernel), …})
//			if err != nil {
//				return err
//			}
//			xv1.RegisterXServiceServer(s.Server, NewHandler(core))
//			return s.Serve(ctx)
//		})
//	}
package service
