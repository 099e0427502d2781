package service

import (
	"context"
	"fmt"
	"io"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// ListenerName is the name of a sidecar's one listener; it is also the key
// of its address in the address file.
const ListenerName = "grpc"

// KernelCheck is the name of a sidecar's health probe of the kernel.
const KernelCheck = "kernel"

// Sidecar is a started sidecar: a [Process] with one listener that calls
// the kernel's adapter listener.
type Sidecar struct {
	*Process
	// Kernel is the connection to the kernel's adapter listener; the
	// server must carry the kernel role.
	Kernel *grpc.ClientConn
	// Server is the gRPC server of the one listener; register the service
	// on it, then call [Sidecar.Serve].
	Server *serve.Server

	cfg Config
}

// MainSidecar is [Main] for a sidecar called name that runs as role: it
// dials the kernel (no call is made yet: a kernel that is down fails the
// first call and the health probe, not the start) and builds the server,
// authorising calls against policy, before calling run.
func MainSidecar(ctx context.Context, name string, role pki.Role, args []string, stdout io.Writer, cfg SidecarFile,
	policy serve.Policy, run func(context.Context, *Sidecar) error) error {
	return Main(ctx, Program{Name: name, Role: role, Config: cfg, Run: func(ctx context.Context, p *Process) error {
		s, err := NewSidecar(ctx, p, *cfg.Sidecar(), policy)
		if err != nil {
			return err
		}
		return run(ctx, s)
	}}, args, stdout)
}

// NewSidecar dials the kernel from p as cfg says and builds the sidecar's
// server with policy.
func NewSidecar(ctx context.Context, p *Process, cfg Config, policy serve.Policy) (*Sidecar, error) {
	conn, err := p.Dial(ctx, cfg.Kernel, pki.Expect{Role: pki.RoleKernel, ServerName: cfg.KernelServerName})
	if err != nil {
		return nil, err
	}
	return &Sidecar{Process: p, Kernel: conn, Server: p.NewServer(ListenerName, policy), cfg: cfg}, nil
}

// Serve serves the one listener ([ListenerName]) until ctx ends, as
// [Process.Serve] does, with the kernel's health as a dependency of every
// service: a sidecar whose kernel does not answer, or answers that its
// adapter service cannot serve, reports NOT_SERVING, since it can do
// nothing without the kernel's say-so.
func (s *Sidecar) Serve(ctx context.Context, fields ...zap.Field) error {
	s.Check(KernelCheck, s.kernelServing)
	return s.Process.Serve(ctx, []serve.Listener{{Name: ListenerName, Addr: s.cfg.Listen, Server: s.Server}},
		append([]zap.Field{zap.String("kernel", s.cfg.Kernel)}, fields...)...)
}

func (s *Sidecar) kernelServing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.KernelTimeout.D(DefaultKernelTimeout))
	defer cancel()
	resp, err := healthpb.NewHealthClient(s.Kernel).Check(ctx, &healthpb.HealthCheckRequest{Service: kernelv1.AdapterService_ServiceDesc.ServiceName})
	if err != nil {
		return fmt.Errorf("kernel at %s: %w", s.cfg.Kernel, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("kernel at %s reports %s", s.cfg.Kernel, resp.GetStatus())
	}
	return nil
}
