package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/version"
)

// Path is where the streamable HTTP endpoint is served.
const Path = "/mcp"

// Names of the listeners in the address file.
const (
	MCPListener     = "mcp" // its value is the endpoint's URL
	MetricsListener = service.MetricsListener
)

// readHeaderTimeout bounds a client's request headers.
const readHeaderTimeout = 10 * time.Second

// Flags are ambit-mcp's command-line flags: the process frame's, and
// --stdio.
type Flags struct {
	service.Flags
	// Stdio serves MCP over stdin and stdout instead of HTTP.
	Stdio bool
}

// ParseFlags parses args (without the program name). Usage goes to out;
// --help returns flag.ErrHelp.
func ParseFlags(args []string, out io.Writer) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet(Name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: %s --config FILE [--stdio | --listen HOST:PORT] [flags]\n\n"+
			"An MCP server for one agent's task: over stdin and stdout with --stdio, otherwise\n"+
			"streamable HTTP at http://LISTEN%s. Every configuration key can also be set by an\n"+
			"environment variable: %s<KEY> (AMBIT_TASK_ID, AMBIT_LOG_LEVEL, …).\n\n", Name, Path, config.EnvPrefix)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.Config, "config", "", "YAML configuration `file` (required)")
	fs.StringVar(&f.Listen, "listen", "", "loopback `host:port` of the streamable HTTP endpoint, overriding the configuration")
	fs.StringVar(&f.AddrFile, "addr-file", "", "`file` to write the bound addresses to (JSON; \"mcp\" is the endpoint's URL), overriding the configuration")
	fs.BoolVar(&f.Stdio, "stdio", false, "serve MCP over stdin and stdout (logs go to stderr)")
	fs.BoolVar(&f.Version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return Flags{}, err
	}
	switch {
	case fs.NArg() > 0:
		return Flags{}, fmt.Errorf("%s: unexpected arguments %q", Name, fs.Args())
	case f.Config == "" && !f.Version:
		return Flags{}, fmt.Errorf("%s: --config is required", Name)
	case f.Stdio && f.Listen != "":
		return Flags{}, fmt.Errorf("%s: --listen has no meaning with --stdio", Name)
	}
	return f, nil
}

// SetListen overrides the listen address (the --listen flag).
func (c *Config) SetListen(addr string) { c.Listen = addr }

// Run is the ambit-mcp program: it parses args, loads the configuration,
// connects to the kernel and the agent's adapters with the agent's keys
// and serves MCP — over stdin and stdout with --stdio, otherwise over
// streamable HTTP — until ctx ends or (stdio) the client closes stdin.
// Usage and the version go to stdout; logs go to stderr.
func Run(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser) error {
	f, err := ParseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.Version {
		_, err := fmt.Fprintln(stdout, version.String(Name))
		return err
	}
	var cfg Config
	if err := service.Load(f.Flags, os.LookupEnv, &cfg); err != nil {
		return err
	}
	if f.Stdio && cfg.Tracing == service.TracingStdout {
		return fmt.Errorf("config %s: tracing: stdout carries MCP with --stdio; trace to a file", f.Config)
	}
	log, err := serve.NewLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log = log.With(zap.String("service", Name), zap.String("identity", cfg.Identity))
	defer service.PaceGC(cfg.Common, log)()
	p, err := service.Start(ctx, Name, pki.RoleAgent, cfg.Common, log)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	agent, err := dial(ctx, p, cfg)
	if err != nil {
		return err
	}
	g := New(agent, Options{TaskID: cfg.TaskID, Purpose: cfg.Purpose, CallTimeout: cfg.CallTimeout.D(DefaultCallTimeout),
		Version: version.Version, Log: p.Log})
	return serveAll(ctx, p, cfg, f.Stdio, g, &mcp.IOTransport{Reader: stdin, Writer: stdout})
}

// dial connects with the agent's certificate to the kernel's agent
// listener and the agent's adapters, each of which must carry its role.
// No call is made yet: a process that is down fails the first call.
func dial(ctx context.Context, p *service.Process, cfg Config) (*client.Agent, error) {
	var c client.Conns
	for _, d := range []struct {
		addr string
		role pki.Role
		into *grpc.ClientConnInterface
	}{
		{cfg.Kernel, pki.RoleKernel, &c.Kernel},
		{cfg.Evidence, pki.RoleEvidence, &c.Evidence},
		{cfg.Action, pki.RoleAction, &c.Action},
		{cfg.Verifier, pki.RoleVerifier, &c.Verifier},
	} {
		conn, err := p.Dial(ctx, d.addr, pki.Expect{Role: d.role})
		if err != nil {
			return nil, err
		}
		*d.into = conn
	}
	return client.New(c), nil
}

// serveAll serves MCP (stdio or HTTP) and, when configured, metrics,
// until ctx ends or the stdio client leaves; then it stops both within
// the shutdown grace.
func serveAll(ctx context.Context, p *service.Process, cfg Config, stdio bool, g *Gateway, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	grace := cfg.ShutdownGrace.D(service.DefaultShutdownGrace)
	addrs := map[string]string{}
	var servers []*http.Server
	var lc net.ListenConfig
	listen := func(name, addr string, h http.Handler) (net.Listener, error) {
		l, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			for _, s := range servers {
				_ = s.Close()
			}
			return nil, fmt.Errorf("listen %s on %s: %w", name, addr, err)
		}
		servers = append(servers, &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout})
		addrs[name] = l.Addr().String()
		return l, nil
	}
	var lis []net.Listener
	if cfg.Metrics != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(p.Metrics, promhttp.HandlerOpts{Registry: p.Metrics}))
		l, err := listen(MetricsListener, cfg.Metrics, mux)
		if err != nil {
			return err
		}
		lis = append(lis, l)
	}
	if !stdio {
		mux := http.NewServeMux()
		mux.Handle(Path, g.Handler())
		l, err := listen(MCPListener, cfg.Listen, mux)
		if err != nil {
			return err
		}
		lis = append(lis, l)
		addrs[MCPListener] = "http://" + addrs[MCPListener] + Path
	}
	if cfg.AddrFile != "" {
		if err := serve.WriteAddrFile(cfg.AddrFile, addrs); err != nil {
			for _, s := range servers {
				_ = s.Close()
			}
			return err
		}
	}
	fields := []zap.Field{zap.String("task", cfg.TaskID), zap.String("kernel", cfg.Kernel), zap.Bool("stdio", stdio)}
	if u, ok := addrs[MCPListener]; ok {
		fields = append(fields, zap.String("url", u))
	}
	p.Log.Info("starting", fields...)
	var eg errgroup.Group
	for i, s := range servers {
		eg.Go(func() error {
			if err := s.Serve(lis[i]); !errors.Is(err, http.ErrServerClosed) {
				cancel()
				return fmt.Errorf("serve http: %w", err)
			}
			return nil
		})
	}
	if stdio {
		eg.Go(func() error {
			// The client closing stdin ends the session and the process.
			defer cancel()
			if err := g.Server().Run(ctx, t); err != nil && ctx.Err() == nil {
				return fmt.Errorf("serve stdio: %w", err)
			}
			return nil
		})
	}
	<-ctx.Done()
	sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer stop()
	for _, s := range servers {
		// Open event streams never end on their own: after the grace,
		// cut them.
		if err := s.Shutdown(sctx); err != nil {
			_ = s.Close()
		}
	}
	err := eg.Wait()
	p.Log.Info("stopped")
	return err
}
