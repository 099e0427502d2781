package verify

import (
	"context"
	"io"

	"go.uber.org/zap"

	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/verifier/readback"
)

// Run is the ambit-verifier program: it parses args (--config FILE,
// optional --listen and --addr-file overrides), serves until ctx ends and
// returns after a graceful stop. Usage text goes to stdout.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg Config
	// Main loads cfg before it calls the function.
	return service.MainSidecar(ctx, "ambit-verifier", pki.RoleVerifier, args, stdout, &cfg, Policy(), func(ctx context.Context, s *service.Sidecar) error {
		return run(ctx, cfg, s)
	})
}

func run(ctx context.Context, cfg Config, p *service.Sidecar) error {
	keys := envelope.Keyring{}
	for _, name := range []string{cfg.KernelKey, cfg.ActionKey} {
		pub, err := pki.LoadPublicKey(cfg.PKIDir, name)
		if err != nil {
			return err
		}
		keys[name] = pub
	}
	readTimeout := cfg.ReadTimeout.D(DefaultReadTimeout)
	octx, cancel := context.WithTimeout(ctx, readTimeout)
	readbacks, err := readback.Open(octx, ReadbacksKey, cfg.Readbacks, cfg.Identity)
	cancel()
	if err != nil {
		return err
	}
	defer func() { _ = readbacks.Close() }()
	core, err := NewCore(Deps{
		Issuer:        p.Issuer(),
		Keys:          keys,
		KernelKeyID:   cfg.KernelKey,
		ActionKeyID:   cfg.ActionKey,
		Kernel:        kernelv1.NewAdapterServiceClient(p.Kernel),
		KernelTimeout: cfg.KernelTimeout.D(service.DefaultKernelTimeout),
		Readbacks:     readbacks,
		ReadTimeout:   readTimeout,
	})
	if err != nil {
		return err
	}
	verifierv1.RegisterVerifierServiceServer(p.Server, NewHandler(core))
	return p.Serve(ctx, zap.Strings("readbacks", readbacks.Tools()))
}
