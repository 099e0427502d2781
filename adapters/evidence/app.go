package evidence

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/adapters/internal/process"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// Run is the ambit-evidence program: it parses args (--config FILE,
// optional --listen and --addr-file overrides), serves until ctx ends and
// returns after a graceful stop. Usage text goes to stdout.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	flags, err := process.ParseFlags("ambit-evidence", args, stdout)
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
	log = log.With(zap.String("service", "ambit-evidence"), zap.String("identity", cfg.Identity))
	return run(ctx, cfg, log)
}

func run(ctx context.Context, cfg Config, log *zap.Logger) error {
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
	sources, dbs, err := openSources(ctx, cfg.Sources)
	defer func() {
		for _, db := range dbs {
			_ = db.Close()
		}
	}()
	if err != nil {
		return err
	}
	conn, err := serve.Dial(ctx, cfg.Kernel, clientTLS)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	core, err := NewCore(Deps{
		Identity:      cfg.Identity,
		Signer:        envelope.NewSigner(cfg.Identity, key),
		Kernel:        kernelv1.NewAdapterServiceClient(conn),
		KernelTimeout: cfg.KernelTimeout.D(DefaultKernelTimeout),
		Sources:       sources,
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
	evidencev1.RegisterEvidenceServiceServer(srv.GRPC, NewHandler(core))
	if err := srv.CheckPolicy(); err != nil {
		return err
	}
	log.Info("starting", zap.String("kernel", cfg.Kernel), zap.Int("sources", len(sources)))
	return process.Serve(ctx, log, srv, cfg.Listen, cfg.AddrFile, cfg.ShutdownGrace.D(DefaultShutdownGrace))
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
