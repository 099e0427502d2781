package serve

import (
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the domain of the ErrorInfo every Ambit refusal carries.
const ErrorDomain = "ambit"

// Error returns a refusal: a status with code and msg that carries a
// google.rpc.ErrorInfo whose reason is reason's name (e.g.
// "ERROR_REASON_UNKNOWN_SOURCE") and whose domain is [ErrorDomain], so a
// client in any language can switch on it. Every Ambit process refuses
// through it.
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
