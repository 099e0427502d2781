package server

import (
	"errors"

	"github.com/ambitkernel/ambit/kernel/authority"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"github.com/ambitkernel/ambit/sdk/serve"
	"google.golang.org/grpc/codes"
)

// Status maps an error from package authority to a gRPC status. A refusal
// keeps its message and carries its reason as ErrorInfo; anything else is
// returned as is for the serving interceptor (sdk/serve), the one mapping
// every process shares: it answers storage that cannot take a write
// (disk full, read-only) Unavailable and anything else Internal, logging
// the cause once and keeping it off the wire.
func Status(err error) error {
	if err == nil {
		return nil
	}
	var r *authority.Refusal
	if !errors.As(err, &r) {
		return err
	}
	code := codes.Unknown
	switch {
	case errors.Is(r.Kind, authority.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(r.Kind, authority.ErrDenied):
		code = codes.PermissionDenied
	case errors.Is(r.Kind, authority.ErrStale):
		code = codes.FailedPrecondition
	case errors.Is(r.Kind, authority.ErrNotFound):
		code = codes.NotFound
	case errors.Is(r.Kind, authority.ErrExists):
		code = codes.AlreadyExists
	case errors.Is(r.Kind, authority.ErrExhausted):
		code = codes.ResourceExhausted
	}
	return serve.Error(code, errorv1.ErrorReason(errorv1.ErrorReason_value[Reason(r.Reason)]), r.Message)
}

// Reason is the ErrorInfo reason of a refusal reason: its name in the
// ErrorReason enum declared in proto/ambit/error/v1.
func Reason(short string) string {
	name := "ERROR_REASON_" + short
	if _, ok := errorv1.ErrorReason_value[name]; ok {
		return name
	}
	return errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED.String()
}

func invalid(msg string) error {
	return Status(&authority.Refusal{Kind: authority.ErrInvalid, Reason: "INVALID_REQUEST", Message: msg})
}
