package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"
)

// Transport limits of every Ambit server.
const (
	// DefaultMaxRecvMsgSize bounds a request message; gRPC's own default is
	// 4 MiB, more than any Ambit request needs.
	DefaultMaxRecvMsgSize = 1 << 20
	maxConcurrentStreams  = 256
	// streamWorkers run calls on goroutines that live on, whose stacks
	// have grown to a handler's depth (request validation recurses deep),
	// instead of a new goroutine per call growing its stack again (4-5 %
	// of the kernel's CPU at 64 calls in flight, 1 % with them). Calls
	// beyond them still get a goroutine of their own.
	streamWorkers = 64
	// keepaliveMinTime is the shortest ping interval a client may use
	// before the server closes the connection (ENHANCE_YOUR_CALM).
	keepaliveMinTime = 10 * time.Second
	keepaliveTime    = 2 * time.Minute
	keepaliveTimeout = 20 * time.Second
	// Flow-control windows, fixed on both ends of every connection: a
	// fixed window turns off gRPC's bandwidth-delay estimator, which pings
	// the peer whenever a message arrives and no ping of its own is out,
	// so that at one call at a time every call carried two pings and their
	// two acknowledgements. A server's windows hold a request of the
	// default largest size, and a few at once: no more unread bytes than
	// that wait on a connection. A client's are what the estimator grows
	// a window to at most, for large answers over long links.
	serverStreamWindow = DefaultMaxRecvMsgSize
	serverConnWindow   = 4 * DefaultMaxRecvMsgSize
	clientStreamWindow = 4 << 20
	clientConnWindow   = 16 << 20
)

// Server is a gRPC server built by [NewServer], with the health service it
// registered. Register services on GRPC; set Health statuses (Run sets them
// all to NOT_SERVING when it starts draining).
type Server struct {
	GRPC   *grpc.Server
	Health *health.Server

	policy Policy
	// services are the application services registered through
	// [Server.RegisterService].
	services map[string]bool
	failures *decodeFailures
}

var _ grpc.ServiceRegistrar = (*Server)(nil)

// Option configures [NewServer].
type Option func(*options)

type options struct {
	reflection     bool
	maxRecvMsgSize int
	unary          []grpc.UnaryServerInterceptor
	stream         []grpc.StreamServerInterceptor
	statsHandlers  []stats.Handler
}

// WithInterceptors adds interceptors outside the standard chain (see the
// package documentation), in order: they see every call and its final
// status, e.g. to count calls and their codes.
func WithInterceptors(unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) Option {
	return func(o *options) {
		o.unary = append(o.unary, unary...)
		o.stream = append(o.stream, stream...)
	}
}

// WithStatsHandler adds a gRPC stats handler, e.g. OpenTelemetry's, which
// sees each call before any interceptor (and also calls that never reach
// one, such as undecodable requests).
func WithStatsHandler(h stats.Handler) Option {
	return func(o *options) { o.statsHandlers = append(o.statsHandlers, h) }
}

// WithReflection registers gRPC server reflection. It lists the
// application services registered on this server, and nothing else (not
// health, not reflection itself), and describes only the proto files those
// services use, so a listener never discloses another listener's API.
func WithReflection() Option {
	return func(o *options) { o.reflection = true }
}

// WithMaxRecvMsgSize sets the largest request message the server accepts, in
// bytes, instead of [DefaultMaxRecvMsgSize]. Values below 1 are ignored.
func WithMaxRecvMsgSize(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxRecvMsgSize = n
		}
	}
}

// NewServer returns a gRPC server that uses tlsCfg (which should come from
// [pki.ServerTLS]: it must require and verify client certificates) and
// authorises every call against policy. See the package documentation for
// what its interceptors do. The health service is registered and SERVING.
//
// NewServer panics when log or tlsCfg is nil: a server without a logger or
// without TLS is a programming error, never a configuration to run with.
func NewServer(log *zap.Logger, tlsCfg *tls.Config, policy Policy, opts ...Option) *Server {
	if log == nil {
		panic("serve: NewServer: nil logger")
	}
	if tlsCfg == nil {
		panic("serve: NewServer: nil TLS config")
	}
	o := options{maxRecvMsgSize: DefaultMaxRecvMsgSize}
	for _, opt := range opts {
		opt(&o)
	}
	failures := &decodeFailures{}
	valid, err := newValidator()
	if err != nil {
		panic("serve: NewServer: request validator: " + err.Error())
	}
	ic := &interceptors{log: log, policy: policy, failures: failures, valid: valid}
	serverOpts := []grpc.ServerOption{
		grpc.Creds(credentials.NewTLS(tlsCfg)),
		grpc.ForceServerCodecV2(newCodec(failures)),
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.StaticStreamWindowSize(serverStreamWindow),
		grpc.StaticConnWindowSize(serverConnWindow),
		grpc.MaxRecvMsgSize(o.maxRecvMsgSize),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             keepaliveMinTime,
			PermitWithoutStream: true,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:    keepaliveTime,
			Timeout: keepaliveTimeout,
		}),
		grpc.ChainUnaryInterceptor(ic.unary(o.unary)...),
		grpc.ChainStreamInterceptor(ic.stream(o.stream)...),
	}
	for _, sh := range o.statsHandlers {
		serverOpts = append(serverOpts, grpc.StatsHandler(sh))
	}
	srv := &Server{GRPC: grpc.NewServer(serverOpts...), Health: health.NewServer(), policy: policy, services: map[string]bool{}, failures: failures}
	srv.Health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	// Through RegisterService, like every service, so that their
	// requests are checked too.
	healthpb.RegisterHealthServer(srv, srv.Health)
	if o.reflection {
		registerReflection(srv)
	}
	return srv
}

// RegisterService registers an application service, as the generated
// RegisterXServer functions do when given the Server. Register services
// here rather than on GRPC: a request that does not decode is then
// answered InvalidArgument, not the Internal gRPC itself would answer,
// and never reaches the handler.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	d := *desc
	d.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		handler := m.Handler
		d.Methods[i] = grpc.MethodDesc{
			MethodName: m.MethodName,
			Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				return handler(srv, ctx, func(m any) error { return s.failures.check(m, dec(m)) }, ic)
			},
		}
	}
	s.GRPC.RegisterService(&d, impl)
	if !infrastructure[d.ServiceName] {
		s.services[d.ServiceName] = true
	}
}

// Services lists the application services registered on the server,
// sorted.
func (s *Server) Services() []string { return sortedKeys(s.services) }

// CheckPolicy compares the server's policy with the services registered on
// it and reports every mismatch: a malformed entry (see [Policy.Validate]),
// an entry for a method the server does not serve (a typo denies the real
// method), and a served method without an entry (denied to every role).
// A service registered on GRPC directly rather than through
// [Server.RegisterService] is reported too. Call it after registering
// services, before [Run].
func (s *Server) CheckPolicy() error {
	errs := []error{s.policy.Validate()}
	served := make(map[string]bool)
	info := s.GRPC.GetServiceInfo()
	for _, service := range sortedKeys(info) {
		if !s.services[service] && !infrastructure[service] {
			errs = append(errs, fmt.Errorf("service %s was registered on GRPC directly; register it on the Server", service))
		}
		for _, m := range info[service].Methods {
			method := "/" + service + "/" + m.Name
			served[method] = true
			if _, ok := s.policy[method]; !ok && !isOpen(method) {
				errs = append(errs, fmt.Errorf("policy: served method %s has no entry and is denied to every role", method))
			}
		}
	}
	for _, method := range sortedKeys(s.policy) {
		if !served[method] {
			errs = append(errs, fmt.Errorf("policy: method %s is not served", method))
		}
	}
	return errors.Join(errs...)
}
