package server

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"go.uber.org/zap"
)

// Run is the ambit-kernel process: it reads the configuration named by
// --config, opens the store, replays the ledger and serves the three
// listeners until ctx is cancelled.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("ambit-kernel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (YAML)")
	addrFile := fs.String("addr-file", "", "write bound addresses here (overrides addr_file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cfgPath == "" {
		return fmt.Errorf("ambit-kernel: --config is required")
	}
	var cfg Config
	if err := config.Load(*cfgPath, &cfg); err != nil {
		return err
	}
	if *addrFile != "" {
		cfg.AddrFile = *addrFile
	}
	if err := cfg.check(); err != nil {
		return err
	}
	log, err := serve.NewLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log = log.With(zap.String("process", "ambit-kernel"))

	auth, err := cfg.authorities()
	if err != nil {
		return err
	}
	signKey, err := pki.LoadSigningKey(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return err
	}
	keys := envelope.Keyring{cfg.Identity: signKey.Public().(ed25519.PublicKey)}
	for _, group := range [][]string{cfg.Peers.Evidence, cfg.Peers.Action, cfg.Peers.Verifier} {
		for _, name := range group {
			pub, err := pki.LoadPublicKey(cfg.PKIDir, name)
			if err != nil {
				return err
			}
			keys[name] = pub
		}
	}
	durability := cfg.Durability
	if durability == "" {
		durability = store.DurabilityFull
	}
	st, err := store.Open(ctx, cfg.Database, durability)
	if err != nil {
		return err
	}
	defer st.Close()
	checkpoints, err := openLog(ctx, &cfg, st, signKey, log)
	if err != nil {
		return err
	}
	k, err := authority.New(ctx, authority.Options{
		Store:         st,
		Signer:        envelope.NewSigner(cfg.Identity, signKey),
		Keys:          keys,
		Peers:         authority.Peers(cfg.Peers),
		Authorities:   auth,
		CapabilityTTL: cfg.CapabilityTTL.D(5 * time.Minute),
		Log:           log,
	})
	if err != nil {
		return err
	}
	tlsCfg, err := pki.ServerTLS(cfg.PKIDir, cfg.Identity)
	if err != nil {
		return err
	}
	var agentOpts []serve.Option
	if cfg.Reflection {
		agentOpts = append(agentOpts, serve.WithReflection())
	}
	agentSrv := serve.NewServer(log.With(zap.String("listener", "agent")), tlsCfg, AgentPolicy(), agentOpts...)
	agentv1.RegisterAgentServiceServer(agentSrv.GRPC, &Agent{K: k})
	adapterSrv := serve.NewServer(log.With(zap.String("listener", "adapter")), tlsCfg, AdapterPolicy())
	kernelv1.RegisterAdapterServiceServer(adapterSrv.GRPC, &Adapter{K: k})
	govSrv := serve.NewServer(log.With(zap.String("listener", "governance")), tlsCfg, GovernancePolicy())
	kernelv1.RegisterGovernanceServiceServer(govSrv.GRPC, &Governance{K: k, Store: st, Checkpoints: checkpoints})
	for _, s := range []*serve.Server{agentSrv, adapterSrv, govSrv} {
		if err := s.CheckPolicy(); err != nil {
			return err
		}
	}
	ready := func(addrs map[string]string) {
		log.Info("serving", zap.Any("addresses", addrs))
		if cfg.AddrFile != "" {
			if err := serve.WriteAddrFile(cfg.AddrFile, addrs); err != nil {
				log.Error("write address file", zap.Error(err))
			}
		}
	}
	// Checkpoints are published until the listeners have stopped, then
	// once more, so that the last checkpoint holds every entry.
	publishing, stopPublishing := context.WithCancel(context.WithoutCancel(ctx))
	published := make(chan error, 1)
	go func() { published <- checkpoints.Run(publishing) }()
	err = serve.Run(ctx, log, cfg.ShutdownGrace.D(10*time.Second), ready,
		serve.Listener{Name: "agent", Addr: cfg.Listen.Agent, Server: agentSrv},
		serve.Listener{Name: "adapter", Addr: cfg.Listen.Adapter, Server: adapterSrv},
		serve.Listener{Name: "governance", Addr: cfg.Listen.Governance, Server: govSrv},
	)
	stopPublishing()
	return errors.Join(err, <-published)
}
