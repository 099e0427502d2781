package verify

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"go.uber.org/zap"

	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/verifier/payments"
)

// listenerName is the key of the bound address in the address file.
const listenerName = "grpc"

// Run is the ambit-verifier program: it parses args (--config FILE,
// optional --listen and --addr-file overrides), serves until ctx ends and
// returns after a graceful stop. Usage text goes to stdout.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ambit-verifier", flag.ContinueOnError)
	fs.SetOutput(stdout)
	cfgPath := fs.String("config", "", "YAML configuration `file` (required)")
	listen := fs.String("listen", "", "listen `host:port`, overriding the configuration")
	addrFile := fs.String("addr-file", "", "`file` to write the bound address to (JSON), overriding the configuration")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("ambit-verifier: unexpected arguments %q", fs.Args())
	}
	if *cfgPath == "" {
		return errors.New("ambit-verifier: --config is required")
	}
	cfg, err := LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	if *addrFile != "" {
		cfg.AddrFile = *addrFile
	}
	log, err := serve.NewLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log = log.With(zap.String("service", "ambit-verifier"), zap.String("identity", cfg.Identity))
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
	keys := envelope.Keyring{}
	for _, name := range []string{cfg.KernelKey, cfg.ActionKey} {
		pub, err := pki.LoadPublicKey(cfg.PKIDir, name)
		if err != nil {
			return err
		}
		keys[name] = pub
	}
	ledger, err := payments.Open(cfg.PaymentsDatabase)
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
		Keys:          keys,
		KernelKeyID:   cfg.KernelKey,
		ActionKeyID:   cfg.ActionKey,
		Kernel:        kernelv1.NewAdapterServiceClient(conn),
		KernelTimeout: cfg.KernelTimeout.D(DefaultKernelTimeout),
		Ledger:        ledger,
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
	verifierv1.RegisterVerifierServiceServer(srv.GRPC, NewHandler(core))
	if err := srv.CheckPolicy(); err != nil {
		return err
	}
	log.Info("starting", zap.String("kernel", cfg.Kernel), zap.String("payments_database", cfg.PaymentsDatabase))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var addrErr error
	ready := func(addrs map[string]string) {
		if cfg.AddrFile == "" {
			return
		}
		// ready runs on Run's goroutine before serving starts.
		if err := serve.WriteAddrFile(cfg.AddrFile, addrs); err != nil {
			addrErr = err
			cancel()
		}
	}
	err = serve.Run(ctx, log, cfg.ShutdownGrace.D(DefaultShutdownGrace), ready,
		serve.Listener{Name: listenerName, Addr: cfg.Listen, Server: srv})
	return errors.Join(addrErr, err)
}
