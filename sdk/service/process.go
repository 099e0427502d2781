package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"io"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// ListenerName is the name of a service's one listener; it is also the key
// of its address in the address file.
const ListenerName = "grpc"

// Main is the program of the service binary called name, up to the
// service's own wiring: it loads cfg from args ([Load]; usage text goes to
// stdout, and --help returns nil), builds the logger (every line names the
// service and its identity), starts the [Process] with policy ([Start]) and
// calls run with it; run reads the loaded cfg. The process is closed when
// run returns.
func Main(ctx context.Context, name string, args []string, stdout io.Writer, cfg File, policy serve.Policy,
	run func(context.Context, *Process) error) error {
	err := Load(name, args, stdout, cfg)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	base := cfg.Base()
	log, err := serve.NewLogger(base.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	p, err := Start(ctx, *base, log.With(zap.String("service", name), zap.String("identity", base.Identity)), policy)
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	return run(ctx, p)
}

// Process is a started service: what every service needs before it adds
// its own dependencies and registers its gRPC service.
type Process struct {
	// Log is the service's logger.
	Log *zap.Logger
	// Signer signs the service's receipts with its identity's key (key id =
	// identity).
	Signer *envelope.Signer
	// Kernel is the connection to the kernel's adapter listener.
	Kernel *grpc.ClientConn
	// Server is the gRPC server; register the service on Server.GRPC, then
	// call [Process.Serve].
	Server *serve.Server

	cfg Config
}

// Start loads the identity's TLS certificates and receipt-signing key from
// the PKI directory, opens the connection to the kernel (no call is made
// yet: a kernel that is down fails the first call, not the start) and
// builds the server, authorising calls against policy. Close the process
// when done.
func Start(ctx context.Context, cfg Config, log *zap.Logger, policy serve.Policy) (*Process, error) {
	serverTLS, err := pki.ServerTLS(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return nil, err
	}
	clientTLS, err := pki.ClientTLS(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return nil, err
	}
	key, err := pki.LoadSigningKey(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return nil, err
	}
	conn, err := serve.Dial(ctx, cfg.Kernel, clientTLS)
	if err != nil {
		return nil, err
	}
	var opts []serve.Option
	if cfg.Reflection {
		opts = append(opts, serve.WithReflection())
	}
	return &Process{
		Log:    log,
		Signer: envelope.NewSigner(cfg.Identity, key),
		Kernel: conn,
		Server: serve.NewServer(log, serverTLS, policy, opts...),
		cfg:    cfg,
	}, nil
}

// Serve checks the server's policy against the services registered on it,
// logs "starting" with the kernel's address and fields, and serves on the
// configured listen address until ctx ends; then it drains within the
// shutdown grace. Once the address is bound it is written to the address
// file (when configured) under [ListenerName]; if that fails the server is
// stopped and the error returned, because whoever waits for the file would
// wait forever.
func (p *Process) Serve(ctx context.Context, fields ...zap.Field) error {
	if err := p.Server.CheckPolicy(); err != nil {
		return err
	}
	p.Log.Info("starting", append([]zap.Field{zap.String("kernel", p.cfg.Kernel)}, fields...)...)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var addrErr error
	ready := func(addrs map[string]string) {
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
	err := serve.Run(ctx, p.Log, p.cfg.ShutdownGrace.D(DefaultShutdownGrace), ready,
		serve.Listener{Name: ListenerName, Addr: p.cfg.Listen, Server: p.Server})
	return errors.Join(addrErr, err)
}

// Issuer returns the receipt issuer of the process: its identity, signer
// and logger, with the wall clock and [NewID].
func (p *Process) Issuer() Issuer {
	return Issuer{Identity: p.cfg.Identity, Signer: p.Signer, Log: p.Log}.WithDefaults()
}

// Close stops the server if it still runs (it never started when start-up
// failed after [Start]) and closes the connection to the kernel.
func (p *Process) Close() error {
	p.Server.GRPC.Stop()
	return p.Kernel.Close()
}

// NewID returns 16 random bytes in hex, the random part of every
// identifier a service issues ("ev-…", "eff-…", "pay-…", "rb-…").
func NewID() string {
	b := make([]byte, 16)
	// crypto/rand.Read never fails on supported platforms (it panics
	// instead of returning a short read).
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
