package action

import (
	"context"
	"io"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Run is the ambit-action program: it parses args (--config FILE,
// optional --listen and --addr-file overrides), opens the key table, the
// state checks and the executors (a problem stops the start, naming its
// key path), serves and sweeps unrecorded effects until ctx ends, and
// returns after a graceful stop. Usage text goes to stdout. The process
// frame arms the failpoints [FailpointEnv] names; the adapter claims its
// own ([FailpointAfterStart], [FailpointAfterCommit]) here.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg Config
	// Main loads cfg before it calls the function.
	return service.MainSidecar(ctx, "ambit-action", pki.RoleAction, args, stdout, &cfg, Policy(), func(ctx context.Context, s *service.Sidecar) error {
		return run(ctx, cfg, s)
	})
}

func run(ctx context.Context, cfg Config, p *service.Sidecar) error {
	kernelKey, err := pki.LoadPublicKey(cfg.PKIDir, cfg.KernelKey)
	if err != nil {
		return err
	}
	dbs := NewDatabases(cfg.Durability)
	defer func() { _ = dbs.Close() }()
	db, err := dbs.Open(cfg.Database)
	if err != nil {
		return err
	}
	keys, err := OpenKeys(ctx, db)
	if err != nil {
		return err
	}
	checks, err := OpenStateChecks(ctx, cfg.StateChecks)
	if err != nil {
		return err
	}
	defer func() { _ = CloseStateChecks(checks) }()
	executors, err := OpenExecutors(ctx, cfg.Executors, dbs, cfg.Identity)
	if err != nil {
		return err
	}
	defer func() { _ = CloseExecutors(executors) }()
	core, err := NewCore(Deps{
		Issuer:        p.Issuer(),
		KernelKeys:    envelope.Keyring{cfg.KernelKey: kernelKey},
		KernelKeyID:   cfg.KernelKey,
		Kernel:        kernelv1.NewAdapterServiceClient(p.Kernel),
		KernelTimeout: cfg.KernelTimeout.D(service.DefaultKernelTimeout),
		Keys:          keys,
		Executors:     executors,
		StateChecks:   checks,
		AfterStart:    p.Failpoint(FailpointAfterStart),
		AfterCommit:   p.Failpoint(FailpointAfterCommit),
	})
	if err != nil {
		return err
	}
	actionv1.RegisterActionServiceServer(p.Server, NewHandler(core))
	// What the adapter cannot read makes it NOT_SERVING: its key table
	// (nothing can be executed), an sql executor's table, a state check's
	// table (executions of those tools would all fail).
	p.Check("database", keys.Check)
	for tool, x := range executors {
		if c, ok := x.(interface{ Check(context.Context) error }); ok {
			p.Check("executor "+tool, c.Check)
		}
	}
	for source, c := range checks {
		p.Check("state check "+source, c.Check)
	}
	tools := sortedKeys(executors)
	// The server and the sweep end together: when either returns, the
	// group's context ends the other.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return p.Serve(gctx, zap.String("database", sqldb.Redact(cfg.Database)), zap.Strings("tools", tools),
			zap.Strings("state_checks", sortedKeys(checks)))
	})
	g.Go(func() error {
		return core.RunSweep(gctx, cfg.RecordSweepInterval.D(DefaultRecordSweepInterval))
	})
	return g.Wait()
}
