package serve

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
)

// Messages the client sees instead of an internal cause, which is logged.
const (
	internalMessage    = "internal error"
	unavailableMessage = "storage unavailable; nothing was changed, retry later"
)

type callerKey struct{}

// WithCaller returns ctx carrying id as the authenticated caller, as the
// serving interceptor does after checking the peer's certificate. For code
// that runs a handler in process, such as tests.
func WithCaller(ctx context.Context, id pki.Identity) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

// Caller returns the authenticated identity of the peer of the call whose
// context is ctx, as established by the server's interceptors. It is false
// outside a handler of a [Server].
func Caller(ctx context.Context) (pki.Identity, bool) {
	id, ok := ctx.Value(callerKey{}).(pki.Identity)
	return id, ok
}

// interceptors holds what the server's interceptors share. The chain, from
// the outside in: the caller's extra interceptors (metrics), one log line
// per call (go-grpc-middleware logging), panic recovery (go-grpc-middleware
// recovery; inside the log line so that it records the Internal answer),
// authorisation, request validation against the .proto limits, and error
// hygiene (innermost, so it sees the handler's
// own error).
type interceptors struct {
	log      *zap.Logger
	policy   Policy
	failures *decodeFailures
	valid    *validator
}

func (ic *interceptors) unary(extra []grpc.UnaryServerInterceptor) []grpc.UnaryServerInterceptor {
	return append(append([]grpc.UnaryServerInterceptor(nil), extra...),
		ic.logUnary(logging.UnaryServerInterceptor(callLogger(ic.log), append(logOptions(),
			// The duration is the call's, from callFields: the interceptor
			// times the answer's replay (see logUnary).
			logging.WithDurationField(func(time.Duration) logging.Fields { return nil }))...)),
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(ic.recovered)),
		ic.authUnary, ic.valid.unary, ic.errorsUnary)
}

type callStartKey struct{}

// logUnary runs a call, then hands its answer to the log interceptor, as
// a handler that returns it at once, only when the logger writes lines of
// the call's level. The interceptor builds a call's fields before and
// after the call whether or not its line is written: for the successful
// calls, logged at debug, that was about 4 % of a busy kernel's CPU.
func (ic *interceptors) logUnary(log grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		if !ic.log.Core().Enabled(zapLevel(callLevel(status.Code(err)))) {
			return resp, err
		}
		answer := func(context.Context, any) (any, error) { return resp, err }
		return log(context.WithValue(ctx, callStartKey{}, start), req, info, answer)
	}
}

func (ic *interceptors) stream(extra []grpc.StreamServerInterceptor) []grpc.StreamServerInterceptor {
	return append(append([]grpc.StreamServerInterceptor(nil), extra...),
		logging.StreamServerInterceptor(callLogger(ic.log), logOptions()...),
		recovery.StreamServerInterceptor(recovery.WithRecoveryHandlerContext(ic.recovered)),
		ic.authStream, ic.valid.stream, ic.errorsStream)
}

// recovered logs a handler's panic, with the stack of the panicking
// goroutine (the handler runs inside the deferred recover), and answers
// Internal without the cause.
func (ic *interceptors) recovered(ctx context.Context, p any) error {
	fields := []zap.Field{zap.Any("panic", p), zap.Stack("stack")}
	if m, ok := grpc.Method(ctx); ok {
		fields = append(fields, zap.String("method", m))
	}
	ic.log.Error("handler panicked", append(fields, callerFields(ctx)...)...)
	return status.Error(codes.Internal, internalMessage)
}

func logOptions() []logging.Option {
	return []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		logging.WithLevels(callLevel),
		logging.WithFieldsFromContext(callFields),
		logging.WithDurationField(func(d time.Duration) logging.Fields { return logging.Fields{"took", d} }),
	}
}

// callLevel logs successful calls at debug, refusals (the client's
// problem) at info and failures (the server's) at warn; the cause of an
// internal error has its own error line.
func callLevel(c codes.Code) logging.Level {
	switch c {
	case codes.OK, codes.Canceled:
		return logging.LevelDebug
	case codes.Unknown, codes.DeadlineExceeded, codes.Unimplemented, codes.Internal, codes.Unavailable, codes.DataLoss:
		return logging.LevelWarn
	default:
		return logging.LevelInfo
	}
}

// callFields names the caller (from its verified certificate: the log
// interceptor runs before authorisation) and the trace of a call, and
// times a unary call (see logUnary).
func callFields(ctx context.Context) logging.Fields {
	var f logging.Fields
	if start, ok := ctx.Value(callStartKey{}).(time.Time); ok {
		f = append(f, "took", time.Since(start))
	}
	if id, err := pki.PeerFromContext(ctx); err == nil {
		f = append(f, "caller", id.Name, "role", string(id.Role))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		f = append(f, "trace_id", sc.TraceID().String())
	}
	return f
}

// callFieldNames maps go-grpc-middleware's field names onto Ambit's;
// fields mapped to "" are dropped.
var callFieldNames = map[string]string{
	logging.SystemTag[0]:           "",
	logging.ComponentFieldKey:      "",
	logging.MethodTypeFieldKey:     "",
	"grpc.start_time":              "",
	"grpc.request.deadline":        "deadline",
	"peer.address":                 "peer_addr",
	"grpc.code":                    "grpc_code",
	"grpc.error":                   "error",
	logging.ServiceFieldKey:        "grpc_service",
	logging.MethodFieldKey:         "grpc_method",
	"protocol":                     "",
	"grpc.recv.duration":           "",
	"grpc.send.duration":           "",
	"grpc.request.content":         "",
	"grpc.response.content":        "",
	"grpc.request.deadline_exceed": "",
}

// zapLevel is the zap level of a call's log level.
func zapLevel(lvl logging.Level) zapcore.Level {
	switch lvl {
	case logging.LevelDebug:
		return zapcore.DebugLevel
	case logging.LevelInfo:
		return zapcore.InfoLevel
	case logging.LevelWarn:
		return zapcore.WarnLevel
	default:
		return zapcore.ErrorLevel
	}
}

// callLogger adapts a zap logger to go-grpc-middleware's logging.
func callLogger(log *zap.Logger) logging.Logger {
	return logging.LoggerFunc(func(_ context.Context, lvl logging.Level, msg string, fields ...any) {
		if !log.Core().Enabled(zapLevel(lvl)) {
			return // most calls: a success logged at debug
		}
		out := make([]zap.Field, 0, len(fields)/2)
		var service, method string
		for i := 0; i+1 < len(fields); i += 2 {
			key, _ := fields[i].(string)
			if name, ok := callFieldNames[key]; ok {
				key = name
			}
			switch key {
			case "":
				continue
			case "grpc_service":
				service, _ = fields[i+1].(string)
				continue
			case "grpc_method":
				method, _ = fields[i+1].(string)
				continue
			}
			out = append(out, zap.Any(strings.ReplaceAll(key, ".", "_"), fields[i+1]))
		}
		out = append(out, zap.String("method", "/"+service+"/"+method))
		log.Log(zapLevel(lvl), "call", out...)
	})
}

func (ic *interceptors) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := ic.authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (ic *interceptors) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := ic.authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &contextStream{ServerStream: checkedStream{ServerStream: ss, failures: ic.failures}, ctx: ctx})
}

// authorize authenticates the peer from its verified certificate and checks
// its role against the policy. It returns ctx carrying the identity for
// [Caller], or a status error: Unauthenticated without a usable identity,
// PermissionDenied for a role the policy does not allow.
func (ic *interceptors) authorize(ctx context.Context, method string) (context.Context, error) {
	id, err := pki.PeerFromContext(ctx)
	if err != nil {
		ic.log.Warn("unauthenticated call", zap.String("method", method), zap.Error(err))
		return nil, status.Error(codes.Unauthenticated, "a client certificate with an Ambit identity is required")
	}
	if err := ic.policy.authorize(method, id); err != nil {
		ic.log.Warn("permission denied",
			zap.String("method", method), zap.String("caller", id.Name), zap.String("role", string(id.Role)))
		return nil, err
	}
	return context.WithValue(ctx, callerKey{}, id), nil
}

func (ic *interceptors) errorsUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, ic.wireError(ctx, info.FullMethod, err)
	}
	return resp, nil
}

func (ic *interceptors) errorsStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := handler(srv, ss); err != nil {
		return ic.wireError(ss.Context(), info.FullMethod, err)
	}
	return nil
}

// grpcStatus is implemented by the errors of google.golang.org/grpc/status.
type grpcStatus interface{ GRPCStatus() *status.Status }

// wireError returns what a client may see of a handler's error err; it is
// the one error→status mapping every Ambit server shares.
//
// A gRPC status error passes through unchanged: its message was written for
// the client. A status wrapped with more context passes as the bare status,
// because the wrapping text is internal. The caller's own cancellation or
// deadline stays Canceled or DeadlineExceeded. Storage that cannot take a
// write (disk full, read-only, I/O error, locked) is Unavailable: the
// client may retry once it is back. Anything else is an internal cause.
// The causes of the last two are logged here, once; the client gets only a
// fixed message.
func (ic *interceptors) wireError(ctx context.Context, method string, err error) error {
	if _, ok := err.(grpcStatus); ok {
		return err
	}
	var st grpcStatus
	if errors.As(err, &st) {
		return st.GRPCStatus().Err()
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return status.FromContextError(ctx.Err()).Err()
	}
	fields := append([]zap.Field{zap.String("method", method), zap.Error(err)}, callerFields(ctx)...)
	if StorageUnavailable(err) {
		ic.log.Error("storage unavailable", fields...)
		return status.Error(codes.Unavailable, unavailableMessage)
	}
	ic.log.Error("internal error", fields...)
	return status.Error(codes.Internal, internalMessage)
}

// callerFields names the caller in a log line. Outside the authorisation
// interceptor (a panic recovered around it) the identity is read from the
// peer certificate directly.
func callerFields(ctx context.Context) []zap.Field {
	id, ok := Caller(ctx)
	if !ok {
		var err error
		if id, err = pki.PeerFromContext(ctx); err != nil {
			return nil
		}
	}
	return []zap.Field{zap.String("caller", id.Name), zap.String("role", string(id.Role))}
}

// contextStream is a grpc.ServerStream whose Context carries the caller.
type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

var _ grpc.ServerStream = (*contextStream)(nil)

func (s *contextStream) Context() context.Context { return s.ctx }
