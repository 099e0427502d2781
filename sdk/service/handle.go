package service

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

// Rule maps the errors that match one sentinel (errors.Is) to a gRPC code
// and the reason the refusal carries.
type Rule struct {
	Err  error
	Code codes.Code
	// Reason is sent as the status's ErrorInfo (see [serve.Error]).
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
// rule gives the code, message and reason ([serve.Error]). Anything else is
// returned as it is: the server's interceptor logs it and the client sees
// only "internal error".
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
			return serve.Error(r.Code, r.Reason, err.Error())
		}
		return serve.Error(r.Code, r.Reason, r.Err.Error())
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
