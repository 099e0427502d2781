package service

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/gcpace"
	"github.com/ambitkernel/ambit/sdk/ident"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/version"
)

// Names of the listeners the frame adds itself, as keys of the address
// file.
const (
	MetricsListener = "metrics"
	HealthListener  = "health"
)

// Program describes a process binary to [Main].
type Program struct {
	// Name is the binary's name, e.g. "ambit-kernel".
	Name string
	// Role is the role the process's certificate must carry; it refuses
	// to start with another.
	Role pki.Role
	// Config receives the configuration before Run is called.
	Config File
	// Env looks up environment overrides of configuration keys (nil:
	// os.LookupEnv).
	Env config.Env
	// Run is the process's own wiring: it registers services on servers
	// from the [Process] and calls [Process.Serve].
	Run func(ctx context.Context, p *Process) error
}

// Main is the program of a process binary up to its own wiring: it parses
// args (--config, --addr-file, --listen for a one-listener configuration,
// --version, --help; usage and the version go to stdout and return nil),
// loads the configuration (strict file, environment overrides, defaults,
// validation, flags), builds the logger (every line names the program and
// its identity), starts the [Process] and calls prog.Run with it. The
// process is closed when Run returns.
func Main(ctx context.Context, prog Program, args []string, stdout io.Writer) error {
	_, oneListener := prog.Config.(listenSetter)
	flags, err := ParseFlags(prog.Name, args, stdout, oneListener)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if flags.Version {
		_, err := fmt.Fprintln(stdout, version.String(prog.Name))
		return err
	}
	env := prog.Env
	if env == nil {
		env = os.LookupEnv
	}
	if err := Load(flags, env, prog.Config); err != nil {
		return err
	}
	base := prog.Config.Base()
	log, err := serve.NewLogger(base.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	// Failpoints come from the environment only: they are for crash
	// tests, never part of a deployment's configuration.
	spec, _ := env(FailpointEnv)
	failpoints, err := ParseFailpoints(spec)
	if err != nil {
		return err
	}
	log = log.With(zap.String("service", prog.Name), zap.String("identity", base.Identity))
	defer PaceGC(*base, log)()
	p, err := Start(ctx, prog.Name, prog.Role, *base, log)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	p.failpoints = failpoints
	return prog.Run(ctx, p)
}

// PaceGC paces the process's garbage collector by cfg's gc_headroom_mb
// (gcpace.Keep) unless the environment sets GOGC, and returns what undoes
// it. A process's program calls it once, before [Start]: the pacing is
// the process's, not a Process's.
func PaceGC(cfg Common, log *zap.Logger) (stop func()) {
	if gogc, set := os.LookupEnv("GOGC"); set {
		log.Info("garbage collector paced by GOGC", zap.String("gogc", gogc))
		return func() {}
	}
	log.Info("garbage collector paced", zap.Int("headroom_mb", cfg.GCHeadroomMB))
	return gcpace.Keep(uint64(cfg.GCHeadroomMB) << 20)
}

// Process is a started Ambit process: what every process needs before it
// adds its own dependencies and registers its gRPC services — identity,
// receipt signer, logger, metrics, tracing and health — and the servers
// and connections it made through [Process.NewServer] and [Process.Dial].
type Process struct {
	// Log is the process's logger.
	Log *zap.Logger
	// Signer signs the process's receipts with its identity's key (key id
	// = identity).
	Signer *envelope.Signer
	// Local is the identity the process runs as; its certificate is read
	// again when it changes on disk.
	Local *pki.Local
	// Metrics is the process's Prometheus registry, served on the metrics
	// listener. Register domain metrics (decisions by outcome…) here.
	Metrics *prometheus.Registry

	name       string
	cfg        Common
	failpoints *Failpoints
	telemetry  *telemetry
	health     *healthChecks
	servers    []*serve.Server
	conns      []*grpc.ClientConn
}

// Start loads the identity's TLS certificate (which must carry role) and
// receipt-signing key from the PKI folder, and sets up metrics and
// tracing. Close the process when done.
func Start(ctx context.Context, name string, role pki.Role, cfg Common, log *zap.Logger) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	local, err := pki.LoadLocal(cfg.PKIDir, cfg.Identity, role)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	local.OnReload = func(cert *x509.Certificate, err error) {
		if err != nil {
			log.Error("certificate not reloaded; the previous one is still served", zap.Error(err))
			return
		}
		log.Info("certificate reloaded", zap.String("serial", cert.SerialNumber.String()), zap.Time("not_after", cert.NotAfter))
	}
	key, err := pki.LoadSigningKey(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(name, cfg)
	if err != nil {
		return nil, err
	}
	return &Process{
		Log:       log,
		Signer:    envelope.NewSigner(cfg.Identity, key),
		Local:     local,
		Metrics:   tel.registry,
		name:      name,
		cfg:       cfg,
		telemetry: tel,
		health:    newHealthChecks(log),
	}, nil
}

// NewServer returns a gRPC server for the listener called listener, with
// the process's certificate, call metrics, tracing and (when configured)
// reflection, authorising calls against policy. Register services on it
// and pass it to [Process.Serve].
func (p *Process) NewServer(listener string, policy serve.Policy, opts ...serve.Option) *serve.Server {
	unary := []grpc.UnaryServerInterceptor{p.telemetry.serverMetrics.UnaryServerInterceptor()}
	if fp := p.failpoints.unaryServer(); fp != nil {
		// Outermost: the call's log line is written before the kill.
		unary = append([]grpc.UnaryServerInterceptor{fp}, unary...)
	}
	all := []serve.Option{
		serve.WithInterceptors(unary, []grpc.StreamServerInterceptor{p.telemetry.serverMetrics.StreamServerInterceptor()}),
		serve.WithStatsHandler(otelgrpc.NewServerHandler(p.telemetry.otelOptions()...)),
	}
	if p.cfg.Reflection {
		all = append(all, serve.WithReflection())
	}
	srv := serve.NewServer(p.Log.With(zap.String("listener", listener)), p.Local.ServerTLS(), policy, append(all, opts...)...)
	p.servers = append(p.servers, srv)
	return srv
}

// Dial returns a connection to addr whose server must meet server (its
// role above all), with call metrics and trace propagation. No call is
// made yet: a server that is down fails the first call, not the dial. The
// process closes the connection.
func (p *Process) Dial(ctx context.Context, addr string, server pki.Expect) (*grpc.ClientConn, error) {
	tlsCfg, err := p.Local.ClientTLS(server)
	if err != nil {
		return nil, err
	}
	unary := []grpc.UnaryClientInterceptor{p.telemetry.clientMetrics.UnaryClientInterceptor()}
	if fp := p.failpoints.unaryClient(); fp != nil {
		unary = append(unary, fp)
	}
	conn, err := serve.Dial(ctx, addr, tlsCfg,
		grpc.WithChainUnaryInterceptor(unary...),
		grpc.WithChainStreamInterceptor(p.telemetry.clientMetrics.StreamClientInterceptor()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(p.telemetry.otelOptions()...)))
	if err != nil {
		return nil, err
	}
	p.conns = append(p.conns, conn)
	return conn, nil
}

// Failpoint claims a process's own failpoint (see [Failpoints.Hook]): the
// returned function kills the process when [FailpointEnv] arms name and
// its occurrence has come; it is nil when name is not armed. Claim every
// point before [Process.Serve], which refuses armed names nobody claimed.
func (p *Process) Failpoint(name string) func() { return p.failpoints.Hook(name) }

// Check adds a dependency probe to the process's health: probe returns nil
// while the process can do that part of its job (a dependency answers, a
// database takes writes). The services it gates (full names, as
// registered) report NOT_SERVING while it fails; no services means every
// service of the process. The overall status ("") is SERVING only while
// every probe passes. Probes run before serving starts and then every
// health_interval; add them before [Process.Serve].
func (p *Process) Check(name string, probe func(context.Context) error, services ...string) {
	p.health.add(name, probe, services)
}

// Serve checks every server's policy against the services registered on
// it, probes the dependencies once, and serves the listeners until ctx
// ends; then it drains within the shutdown grace. The metrics listener and
// the plaintext health listener are added when configured. Once every
// address is bound they are written to the address file (when
// configured); if that fails everything is stopped and the error
// returned, because whoever waits for the file would wait forever. fields
// are added to the "starting" line.
func (p *Process) Serve(ctx context.Context, listeners []serve.Listener, fields ...zap.Field) error {
	seen := map[*serve.Server]bool{}
	var servers []*serve.Server
	for _, l := range listeners {
		if l.Server != nil && !seen[l.Server] {
			seen[l.Server] = true
			servers = append(servers, l.Server)
		}
	}
	served := map[string]bool{}
	for _, s := range servers {
		if err := s.CheckPolicy(); err != nil {
			return err
		}
		p.telemetry.serverMetrics.InitializeMetrics(s.GRPC)
		for _, info := range s.GRPC.GetServiceInfo() {
			for _, m := range info.Methods {
				served[m.Name] = true
			}
		}
	}
	if err := p.failpoints.check(served); err != nil {
		return err
	}
	if armed := p.failpoints.Armed(); len(armed) > 0 {
		p.Log.Warn("failpoints armed: the process kills itself with SIGKILL at each", zap.Strings("failpoints", armed))
	}
	all := append([]serve.Listener(nil), listeners...)
	if p.cfg.HealthListen != "" {
		// Plaintext on purpose: it serves the health service alone, so
		// that a probe needs no client certificate.
		plain := &serve.Server{GRPC: grpc.NewServer(), Health: health.NewServer()}
		healthpb.RegisterHealthServer(plain.GRPC, plain.Health)
		all = append(all, serve.Listener{Name: HealthListener, Addr: p.cfg.HealthListen, Server: plain})
		p.health.plain = plain
	}
	p.health.servers = servers
	p.health.update(ctx, p.cfg.HealthInterval.D(DefaultHealthInterval))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	var metricsLis net.Listener
	if p.cfg.Metrics != "" {
		var lc net.ListenConfig
		l, err := lc.Listen(ctx, "tcp", p.cfg.Metrics)
		if err != nil {
			for _, s := range servers {
				s.GRPC.Stop()
			}
			return fmt.Errorf("listen metrics on %s: %w", p.cfg.Metrics, err)
		}
		metricsLis = l
		g.Go(func() error { return p.telemetry.serveMetrics(gctx, l, p.cfg.ShutdownGrace.D(DefaultShutdownGrace)) })
	}
	p.Log.Info("starting", fields...)
	var addrErr error
	ready := func(addrs map[string]string) {
		if metricsLis != nil {
			addrs[MetricsListener] = metricsLis.Addr().String()
		}
		if p.cfg.AddrFile == "" {
			return
		}
		// ready runs on Run's goroutine before serving starts, so addrErr
		// is not shared with another goroutine.
		if err := serve.WriteAddrFile(p.cfg.AddrFile, addrs); err != nil {
			addrErr = err
			cancel()
		}
	}
	g.Go(func() error {
		defer cancel() // Run returned: stop the metrics listener and the probes
		return serve.Run(gctx, p.Log, p.cfg.ShutdownGrace.D(DefaultShutdownGrace), ready, all...)
	})
	g.Go(func() error {
		p.health.loop(gctx, p.cfg.HealthInterval.D(DefaultHealthInterval))
		return nil
	})
	err := g.Wait()
	if metricsLis != nil && errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return errors.Join(addrErr, err)
}

// Issuer returns the receipt issuer of the process: its identity, signer
// and logger, with the wall clock and [NewID].
func (p *Process) Issuer() Issuer {
	return Issuer{Identity: p.cfg.Identity, Signer: p.Signer, Log: p.Log}.WithDefaults()
}

// Close stops the servers if they still run (they never started when
// start-up failed), closes the connections and flushes the spans.
func (p *Process) Close() error {
	for _, s := range p.servers {
		s.GRPC.Stop()
	}
	var errs []error
	for _, c := range p.conns {
		errs = append(errs, c.Close())
	}
	errs = append(errs, p.telemetry.close())
	return errors.Join(errs...)
}

// NewID returns the part after the prefix of every identifier a service
// issues ("ev-…", "eff-…", "rb-…"): 32 hex digits, the time and 10 random
// bytes ([ident.New]).
func NewID() string { return ident.New(10) }
