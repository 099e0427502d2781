package service

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

// ErrorDomain is the domain of the ErrorInfo every Ambit refusal carries.
const ErrorDomain = "ambit"

// Error returns a refusal: a status with code and msg that carries a
// google.rpc.ErrorInfo whose reason is reason's name (e.g.
// "ERROR_REASON_UNKNOWN_SOURCE") and whose domain is [ErrorDomain], so a
// client in any language can switch on it.
func Error(code codes.Code, reason errorv1.ErrorReason, msg string) error {
	st := status.New(code, msg)
	// WithDetails fails only for a detail that cannot be marshalled,
	// which an ErrorInfo always can.
	if with, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason.String(), Domain: ErrorDomain}); err == nil {
		st = with
	}
	return st.Err()
}

// Reason returns the ErrorReason an Ambit refusal carries (see [Error]):
// UNSPECIFIED for an error without one or with a reason of another domain
// or unknown to this build.
func Reason(err error) errorv1.ErrorReason {
	st, ok := status.FromError(err)
	if !ok {
		return errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return errorv1.ErrorReason(errorv1.ErrorReason_value[info.GetReason()])
		}
	}
	return errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED
}

// Rule maps the errors that match one sentinel (errors.Is) to a gRPC code
// and the reason the refusal carries.
type Rule struct {
	Err  error
	Code codes.Code
	// Reason is sent as the status's ErrorInfo (see [Error]).
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

// Validate reports every rule without a sentinel, with code OK or without
// a reason; a service's tests call it on its table.
func (s Statuses) Validate() error {
	var errs []error
	for i, r := range s {
		switch {
		case r.Err == nil:
			errs = append(errs, fmt.Errorf("statuses[%d]: no error", i))
		case r.Code == codes.OK:
			errs = append(errs, fmt.Errorf("statuses[%d] (%v): code OK", i, r.Err))
		case r.Reason == errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED:
			errs = append(errs, fmt.Errorf("statuses[%d] (%v): no reason", i, r.Err))
		}
	}
	return errors.Join(errs...)
}

// Status maps err. nil stays nil; a kernel refusal ([upstream.Refusal])
// keeps the kernel's status, its ErrorInfo included; the first matching
// rule gives the code, message and reason ([Error]). Anything else is returned as it is: the server's interceptor
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
		if r.WithCauses {
			return Error(r.Code, r.Reason, err.Error())
		}
		return Error(r.Code, r.Reason, r.Err.Error())
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
