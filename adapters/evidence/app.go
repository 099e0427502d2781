package evidence

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/ambitkernel/ambit/adapters/claims"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
)

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

func run(ctx context.Context, cfg Config, p *service.Sidecar) error {
	sources, dbs, err := openSources(ctx, cfg.Sources)
	defer func() {
		for _, db := range dbs {
			_ = db.Close()
		}
	}()
	if err != nil {
		return err
	}
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
	// of it would all fail.
	for name, src := range sources {
		if c, ok := src.Connector.(interface{ Check(context.Context) error }); ok {
			p.Check("source "+name, c.Check)
		}
	}
	return p.Serve(ctx, zap.Int("sources", len(sources)))
}

// openSources opens every source read-only and proves its table readable.
// The databases opened so far are returned also on error, for closing.
func openSources(ctx context.Context, cfgs map[string]SourceConfig) (map[string]Source, []*sql.DB, error) {
	sources := make(map[string]Source, len(cfgs))
	var dbs []*sql.DB
	for name, sc := range cfgs {
		prov, err := ParseProvenance(sc.Provenance)
		if err != nil {
			return nil, dbs, fmt.Errorf("source %s: %w", name, err)
		}
		db, err := claims.OpenReadOnly(sc.Database)
		if err != nil {
			return nil, dbs, fmt.Errorf("source %s: %w", name, err)
		}
		dbs = append(dbs, db)
		conn, err := claims.NewConnector(db, claims.Kind(sc.Kind))
		if err != nil {
			return nil, dbs, fmt.Errorf("source %s: %w", name, err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = conn.Check(cctx)
		cancel()
		if err != nil {
			return nil, dbs, fmt.Errorf("source %s (%s): %w", name, sc.Database, err)
		}
		sources[name] = Source{Connector: conn, Provenance: prov}
	}
	return sources, dbs, nil
}
