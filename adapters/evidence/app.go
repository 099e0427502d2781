package evidence

import (
	"context"
	"io"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
)

// SourcesCheck is the name of the health probe of the sources.
const SourcesCheck = "sources"

// Run is the ambit-evidence program: it parses args (--config FILE,
// optional --listen and --addr-file overrides), serves until ctx ends and
// returns after a graceful stop. Usage text goes to stdout.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg Config
	// Main loads cfg before it calls the function.
	return service.MainSidecar(ctx, "ambit-evidence", pki.RoleEvidence, args, stdout, &cfg, Policy(), func(ctx context.Context, s *service.Sidecar) error {
		return run(ctx, cfg, s)
	})
}

// run opens the sources, then serves reads while watching records, until
// ctx ends; the two stop together.
func run(ctx context.Context, cfg Config, p *service.Sidecar) error {
	sources, err := OpenSources(ctx, cfg.Sources)
	if err != nil {
		return err
	}
	defer CloseSources(sources)
	core, err := NewCore(Deps{
		Issuer:        p.Issuer(),
		Kernel:        kernelv1.NewAdapterServiceClient(p.Kernel),
		KernelTimeout: cfg.KernelTimeout.D(service.DefaultKernelTimeout),
		Sources:       sources,
	})
	if err != nil {
		return err
	}
	evidencev1.RegisterEvidenceServiceServer(p.Server, NewHandler(core))
	// A source that cannot be read makes the adapter NOT_SERVING: reads
	// of it would fail.
	p.Check(SourcesCheck, core.Check)
	// A watcher that cannot poll the kernel leaves changes unreported.
	p.Check(WatchCheck, core.CheckWatch)
	interval := cfg.WatchInterval.D(DefaultWatchInterval)
	gctx, stop := context.WithCancel(ctx)
	defer stop()
	var g errgroup.Group
	// Serve returns once ctx ends, or on a failure; either way the watcher
	// stops with it.
	g.Go(func() error {
		defer stop()
		return p.Serve(gctx, zap.Int("sources", len(sources)), zap.Duration("watch_interval", interval))
	})
	g.Go(func() error { core.Watch(gctx, interval); return nil })
	return g.Wait()
}
