package action

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/adapters/payments"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Run is the ambit-action program: it parses args (--config FILE,
// optional --listen and --addr-file overrides), serves and sweeps
// unrecorded effects until ctx ends, and returns after a graceful stop.
// Usage text goes to stdout. The [FailpointEnv] environment variable is
// read here.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg Config
	// Main loads cfg before it calls the function.
	return service.MainSidecar(ctx, "ambit-action", pki.RoleAction, args, stdout, &cfg, Policy(), func(ctx context.Context, s *service.Sidecar) error {
		return run(ctx, cfg, s, AfterCommitHook(os.Getenv))
	})
}

func run(ctx context.Context, cfg Config, p *service.Sidecar, afterCommit func()) error {
	kernelKey, err := pki.LoadPublicKey(cfg.PKIDir, cfg.KernelKey)
	if err != nil {
		return err
	}
	ledger, err := payments.Open(ctx, cfg.PaymentsDatabase)
	if err != nil {
		return err
	}
	defer func() { _ = ledger.Close() }()
	claimsDB, err := openClaims(ctx, cfg.ClaimsDatabase)
	if err != nil {
		return err
	}
	if claimsDB != nil {
		defer func() { _ = claimsDB.Close() }()
	}
	core, err := NewCore(Deps{
		Issuer:        p.Issuer(),
		KernelKeys:    envelope.Keyring{cfg.KernelKey: kernelKey},
		KernelKeyID:   cfg.KernelKey,
		Kernel:        kernelv1.NewAdapterServiceClient(p.Kernel),
		KernelTimeout: cfg.KernelTimeout.D(service.DefaultKernelTimeout),
		Ledger:        ledger,
		Claims:        claimsDB,
		AfterCommit:   afterCommit,
	})
	if err != nil {
		return err
	}
	actionv1.RegisterActionServiceServer(p.Server, NewHandler(core))
	if afterCommit != nil {
		p.Log.Warn("failpoint armed: the process kills itself after the next payment commits",
			zap.String("failpoint", FailpointAfterCommit))
	}
	// The server and the sweep end together: when either returns, the
	// group's context ends the other.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return p.Serve(gctx, zap.String("payments_database", cfg.PaymentsDatabase), zap.String("claims_database", cfg.ClaimsDatabase))
	})
	g.Go(func() error {
		return core.RunSweep(gctx, cfg.RecordSweepInterval.D(DefaultRecordSweepInterval))
	})
	return g.Wait()
}

// openClaims opens the claims database at path read-only and proves its
// claims table readable, so that a wrong path fails at start-up rather
// than every execution. An empty path is no database (nil).
func openClaims(ctx context.Context, path string) (*sql.DB, error) {
	if path == "" {
		return nil, nil
	}
	db, err := claims.OpenReadOnly(path)
	if err != nil {
		return nil, err
	}
	table, err := claims.NewConnector(db, claims.KindClaims)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = table.Check(cctx)
		cancel()
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("claims_database %s: %w", path, err)
	}
	return db, nil
}
