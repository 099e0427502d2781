package serve

import (
	"context"
	"errors"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
)

// internalMessage is all a client learns about a panic or an error that is
// not a gRPC status.
const internalMessage = "internal error"

type callerKey struct{}

// Caller returns the authenticated identity of the peer of the call whose
// context is ctx, as established by the server's interceptors. It is false
// outside a handler of a [Server].
// WithCaller returns ctx carrying id as the authenticated caller, as the
// serving interceptor does after checking the peer's certificate. For code
// that runs a handler in process, such as tests.
func WithCaller(ctx context.Context, id pki.Identity) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

func Caller(ctx context.Context) (pki.Identity, bool) {
	id, ok := ctx.Value(callerKey{}).(pki.Identity)
	return id, ok
}

// interceptors holds what the server's interceptors share. The order of the
// chains is: recover (outermost, so it also covers the others), authorise,
// error hygiene (innermost, so it sees the handler's own error).
type interceptors struct {
	log    *zap.Logger
	policy Policy
}

func (ic *interceptors) unary() []grpc.UnaryServerInterceptor {
	return []grpc.UnaryServerInterceptor{ic.recoverUnary, ic.authUnary, ic.errorsUnary}
}

func (ic *interceptors) stream() []grpc.StreamServerInterceptor {
	return []grpc.StreamServerInterceptor{ic.recoverStream, ic.authStream, ic.errorsStream}
}

func (ic *interceptors) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			ic.logPanic(ctx, info.FullMethod, r)
			resp, err = nil, status.Error(codes.Internal, internalMessage)
		}
	}()
	return handler(ctx, req)
}

func (ic *interceptors) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			ic.logPanic(ss.Context(), info.FullMethod, r)
			err = status.Error(codes.Internal, internalMessage)
		}
	}()
	return handler(srv, ss)
}

func (ic *interceptors) logPanic(ctx context.Context, method string, r any) {
	// zap.Stack, called inside the deferred recover, records the stack of
	// the panicking goroutine including the frame that panicked.
	fields := []zap.Field{zap.String("method", method), zap.Any("panic", r), zap.Stack("stack")}
	ic.log.Error("handler panicked", append(fields, callerFields(ctx)...)...)
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
	return handler(srv, &contextStream{ServerStream: ss, ctx: ctx})
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

// wireError returns what a client may see of a handler's error err.
//
// A gRPC status error passes through unchanged: its message was written for
// the client. A status wrapped with more context passes as the bare status,
// because the wrapping text is internal. The caller's own cancellation or
// deadline stays Canceled or DeadlineExceeded. Anything else is an internal
// cause: it is logged here, once, and the client gets Internal "internal
// error".
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
	fields := []zap.Field{zap.String("method", method), zap.Error(err)}
	ic.log.Error("internal error", append(fields, callerFields(ctx)...)...)
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
