package service

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

// ErrorDomain is the domain of the ErrorInfo detail every refusal carries.
const ErrorDomain = "ambit"

// Rule maps the errors that match one sentinel (errors.Is) to a gRPC code
// and a declared reason.
type Rule struct {
	Err  error
	Code codes.Code
	// Reason is sent as the reason of an ErrorInfo detail (its enum name,
	// domain [ErrorDomain]), so a client switches on it rather than on the
	// message.
	Reason errorv1.ErrorReason
	// WithCauses sends the whole error text to the client: the sentinel
	// with what it wraps, e.g. every invalid field. Otherwise the client
	// sees only the sentinel's own text and the causes (a kernel's answer,
	// a signature detail) reach the log only.
	WithCauses bool
}

// Statuses is a service's table from its errors to gRPC statuses, the one
// place they are mapped. Rules are tried in order.
type Statuses []Rule

// Status maps err. nil stays nil; a kernel refusal ([upstream.Refusal])
// keeps the kernel's status, details included; the first matching rule
// gives the code, message and ErrorInfo reason. Anything else is returned as it is: the server's interceptor
// logs it and the client sees only "internal error".
func (s Statuses) Status(err error) error {
	if err == nil {
		return nil
	}
	var refusal *upstream.Refusal
	if errors.As(err, &refusal) {
		return refusal.Status.Err()
	}
	for _, r := range s {
		if !errors.Is(err, r.Err) {
			continue
		}
		msg := r.Err.Error()
		if r.WithCauses {
			msg = err.Error()
		}
		st := status.New(r.Code, msg)
		// WithDetails fails only for a detail that cannot be marshalled,
		// which ErrorInfo always can.
		if withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: r.Reason.String(), Domain: ErrorDomain}); derr == nil {
			st = withInfo
		}
		return st.Err()
	}
	return err
}

// Handle is the request flow of a service's unary handler: validate checks
// the request's shape, call runs it for the authenticated caller (the
// peer's name), and any error of either is mapped with statuses.
func Handle[Req, Resp any](ctx context.Context, req Req, validate func(Req) error,
	call func(ctx context.Context, caller string, req Req) (Resp, error), statuses Statuses) (Resp, error) {
	var none Resp
	if err := validate(req); err != nil {
		return none, statuses.Status(err)
	}
	caller, _ := serve.Caller(ctx)
	resp, err := call(ctx, caller.Name, req)
	if err != nil {
		return none, statuses.Status(err)
	}
	return resp, nil
}
