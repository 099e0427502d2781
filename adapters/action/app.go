package action

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/ambitkernel/ambit/adapters/internal/process"
	"github.com/ambitkernel/ambit/adapters/payments"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// Run is the ambit-action program: it parses args (--config FILE,
// optional --listen and --addr-file overrides), serves and sweeps
// unrecorded effects until ctx ends, and returns after a graceful stop.
// Usage text goes to stdout. The [FailpointEnv] environment variable is
// read here.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	flags, err := process.ParseFlags("ambit-action", args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := LoadConfig(flags.Config)
	if err != nil {
		return err
	}
	if flags.Listen != "" {
		cfg.Listen = flags.Listen
	}
	if flags.AddrFile != "" {
		cfg.AddrFile = flags.AddrFile
	}
	log, err := serve.NewLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log = log.With(zap.String("service", "ambit-action"), zap.String("identity", cfg.Identity))
	return run(ctx, cfg, log, AfterCommitHook(os.Getenv))
}

func run(ctx context.Context, cfg Config, log *zap.Logger, afterCommit func()) error {
	serverTLS, err := pki.ServerTLS(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return err
	}
	clientTLS, err := pki.ClientTLS(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return err
	}
	key, err := pki.LoadSigningKey(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return err
	}
	kernelKey, err := pki.LoadPublicKey(cfg.PKIDir, cfg.KernelKey)
	if err != nil {
		return err
	}
	ledger, err := payments.Open(ctx, cfg.PaymentsDatabase)
	if err != nil {
		return err
	}
	defer func() { _ = ledger.Close() }()
	conn, err := serve.Dial(ctx, cfg.Kernel, clientTLS)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	core, err := NewCore(Deps{
		Identity:      cfg.Identity,
		Signer:        envelope.NewSigner(cfg.Identity, key),
		KernelKeys:    envelope.Keyring{cfg.KernelKey: kernelKey},
		KernelKeyID:   cfg.KernelKey,
		Kernel:        kernelv1.NewAdapterServiceClient(conn),
		KernelTimeout: cfg.KernelTimeout.D(DefaultKernelTimeout),
		Ledger:        ledger,
		AfterCommit:   afterCommit,
		Log:           log,
	})
	if err != nil {
		return err
	}
	var opts []serve.Option
	if cfg.Reflection {
		opts = append(opts, serve.WithReflection())
	}
	srv := serve.NewServer(log, serverTLS, Policy(), opts...)
	actionv1.RegisterActionServiceServer(srv.GRPC, NewHandler(core))
	if err := srv.CheckPolicy(); err != nil {
		return err
	}
	if afterCommit != nil {
		log.Warn("failpoint armed: the process kills itself after the next payment commits",
			zap.String("failpoint", FailpointAfterCommit))
	}
	log.Info("starting", zap.String("kernel", cfg.Kernel), zap.String("payments_database", cfg.PaymentsDatabase))
	// The server and the sweep end together: when either returns, the
	// group's context ends the other.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return process.Serve(gctx, log, srv, cfg.Listen, cfg.AddrFile, cfg.ShutdownGrace.D(DefaultShutdownGrace))
	})
	g.Go(func() error {
		return core.RunSweep(gctx, cfg.RecordSweepInterval.D(DefaultRecordSweepInterval))
	})
	return g.Wait()
}
