package server

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Name is the kernel binary's name.
const Name = "ambit-kernel"

// DatabaseCheck is the name of the kernel's health probe of its database.
const DatabaseCheck = "database"

// Run is the ambit-kernel program: it reads the configuration named by
// --config (environment overrides apply), opens the store, replays the
// ledger and serves the three listeners through the process frame until
// ctx is cancelled. Usage and --version go to stdout.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg Config
	return service.Main(ctx, service.Program{Name: Name, Role: pki.RoleKernel, Config: &cfg,
		// Main loads cfg before it calls Run.
		Run: func(ctx context.Context, p *service.Process) error { return run(ctx, &cfg, p) },
	}, args, stdout)
}

func run(ctx context.Context, cfg *Config, p *service.Process) error {
	auth, err := cfg.authorities()
	if err != nil {
		return err
	}
	keys := envelope.Keyring{}
	for _, name := range append([]string{cfg.Identity}, slices.Concat(cfg.Peers.Evidence, cfg.Peers.Action, cfg.Peers.Verifier)...) {
		pub, err := pki.LoadPublicKey(cfg.PKIDir, name)
		if err != nil {
			return err
		}
		keys[name] = pub
	}
	st, err := store.Open(ctx, cfg.Database, cfg.Durability)
	if err != nil {
		return err
	}
	defer st.Close()
	st.OnCheckpointError(func(err error) { p.Log.Warn("background WAL checkpoint failed; commits go on", zap.Error(err)) })
	st.OnMoveError(func(err error) {
		p.Log.Warn("background move of new capabilities failed; they are read where they wait", zap.Error(err))
	})
	// The checkpoint signer signs notes with the identity's own key.
	signKey, err := pki.LoadSigningKey(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return err
	}
	checkpoints, err := openLog(ctx, cfg, st, signKey, p.Log)
	if err != nil {
		return err
	}
	k, err := authority.New(ctx, authority.Options{
		Store:         st,
		Signer:        p.Signer,
		Keys:          keys,
		Peers:         cfg.Peers.authority(),
		Authorities:   auth,
		CapabilityTTL: cfg.CapabilityTTL.D(DefaultCapabilityTTL),
		Log:           p.Log,
		SnapshotEvery: cfg.LedgerSnapshotEvery,
	})
	if err != nil {
		return err
	}
	writable, closeProbe, err := writableProbe(cfg.Database)
	if err != nil {
		return err
	}
	defer func() { _ = closeProbe() }()
	// Every service needs the database: a read-only or failing database
	// makes the whole kernel NOT_SERVING.
	p.Check(DatabaseCheck, writable)

	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ambit_decisions_total",
		Help: "Decisions on proposals, by outcome.",
	}, []string{"outcome"})
	p.Metrics.MustRegister(decisions)
	observeCommits(st, p.Metrics)

	agentSrv := p.NewServer("agent", AgentPolicy(), serve.WithInterceptors([]grpc.UnaryServerInterceptor{countDecisions(decisions)}, nil))
	agentv1.RegisterAgentServiceServer(agentSrv, &Agent{K: k})
	adapterSrv := p.NewServer("adapter", AdapterPolicy())
	kernelv1.RegisterAdapterServiceServer(adapterSrv, &Adapter{K: k})
	govSrv := p.NewServer("governance", GovernancePolicy())
	kernelv1.RegisterGovernanceServiceServer(govSrv, &Governance{K: k, Store: st, Checkpoints: checkpoints})
	// Checkpoints are published until the listeners have stopped, then
	// once more, so that the last checkpoint holds every entry.
	publishing, stopPublishing := context.WithCancel(context.WithoutCancel(ctx))
	published := make(chan error, 1)
	go func() { published <- checkpoints.Run(publishing) }()
	err = p.Serve(ctx, []serve.Listener{
		{Name: "agent", Addr: cfg.Listen.Agent, Server: agentSrv},
		{Name: "adapter", Addr: cfg.Listen.Adapter, Server: adapterSrv},
		{Name: "governance", Addr: cfg.Listen.Governance, Server: govSrv},
	}, zap.String("database", sqldb.Redact(cfg.Database)), zap.String("durability", string(cfg.Durability)))
	stopPublishing()
	// The listeners have stopped: a last snapshot of the ledger spares the
	// next start the transitions folded since the previous one.
	closed := k.Close(context.WithoutCancel(ctx))
	return errors.Join(err, <-published, closed)
}

// observeCommits has the store's group commits observed: how long each
// COMMIT took (the database's writes and, at durability full, its sync:
// the disk's part of a decision's time) and how many updates it stored.
func observeCommits(st *store.Store, reg prometheus.Registerer) {
	took := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ambit_store_commit_seconds",
		Help:    "Time of each group commit's COMMIT: the database's writes and, at durability full, its sync.",
		Buckets: []float64{.000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	})
	updates := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ambit_store_commit_updates",
		Help:    "Updates (decisions, receipts, redemptions and the rest) stored by each group commit.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 8),
	})
	reg.MustRegister(took, updates)
	st.ObserveCommits(func(c store.Commit) {
		took.Observe(c.Took.Seconds())
		updates.Observe(float64(c.Updates))
	})
}

// countDecisions counts the decisions the agent listener answers, by
// outcome ("allow", "review", "deny").
func countDecisions(c *prometheus.CounterVec) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*agentv1.SubmitProposalResponse); ok && err == nil {
			c.WithLabelValues(strings.ToLower(strings.TrimPrefix(r.GetDecision().GetOutcome().String(), "OUTCOME_"))).Inc()
		}
		return resp, err
	}
}

// writableProbe returns a health probe of whether the database at path
// takes writes: on a connection of its own it opens a write transaction,
// rewrites the header's user_version with its own value and rolls back. A read-only file or file system fails it. A write
// lock held by the kernel's own writer (SQLITE_BUSY) passes: the database
// is being written.
func writableProbe(path string) (func(context.Context) error, func() error, error) {
	if sqldb.IsPostgres(path) {
		return postgresProbe(path)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(0)")
	return writableProbeDSN(path, "file:"+path+"?"+q.Encode())
}

func writableProbeDSN(path, dsn string) (func(context.Context) error, func() error, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("database probe %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	probe := func(ctx context.Context) error {
		conn, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("database %s: %w", path, err)
		}
		// The write transaction ends with the probe, whenever ctx ends: a
		// connection left inside it would hold the database's write lock,
		// and every write of the kernel would wait on it. So the
		// connection is closed, never pooled: closing it rolls back what
		// a statement cut short left open.
		defer func() {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			_ = conn.Close()
		}()
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			if busy(err) {
				return nil
			}
			return fmt.Errorf("database %s does not take writes: %w", path, err)
		}
		// A write that changes nothing, rolled back: BEGIN IMMEDIATE
		// alone succeeds on a read-only connection.
		var v int64
		err = conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		if err == nil {
			_, err = conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		}
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err == nil && rerr != nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("database %s does not take writes: %w", path, err)
		}
		return nil
	}
	return probe, db.Close, nil
}

// postgresProbe returns a health probe of whether the PostgreSQL server
// takes writes: reachable, not a standby in recovery, not read-only.
func postgresProbe(dsn string) (func(context.Context) error, func() error, error) {
	name := sqldb.Redact(dsn)
	db, err := sqldb.OpenPostgres(dsn, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("database probe %s: %w", name, err)
	}
	db.SetMaxOpenConns(1)
	probe := func(ctx context.Context) error {
		var writable bool
		err := db.QueryRowContext(ctx, `SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'`).Scan(&writable)
		switch {
		case err != nil:
			return fmt.Errorf("database %s: %w", name, err)
		case !writable:
			return fmt.Errorf("database %s does not take writes (a standby, or read-only)", name)
		}
		return nil
	}
	return probe, db.Close, nil
}

// busy reports a SQLite SQLITE_BUSY or SQLITE_LOCKED result.
func busy(err error) bool {
	var rc interface{ Code() int }
	if !errors.As(err, &rc) {
		return false
	}
	code := rc.Code() & 0xff
	return code == 5 || code == 6
}
