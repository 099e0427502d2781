package upstream

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Refusal is a refusal by the kernel (PermissionDenied, FailedPrecondition,
// NotFound, InvalidArgument), e.g. a capability already used or revoked by
// a state change, or a field the contract does not grant. Its status
// reaches the client unchanged: the kernel wrote its message for the
// client.
type Refusal struct {
	Status *status.Status
}

func (e *Refusal) Error() string {
	return fmt.Sprintf("kernel refused: %s: %s", e.Status.Code(), e.Status.Message())
}

// GRPCStatus is the kernel's status.
func (e *Refusal) GRPCStatus() *status.Status { return e.Status }

// IsRefusal reports whether code is one by which the kernel refuses a call,
// as opposed to failing to answer it.
func IsRefusal(code codes.Code) bool {
	switch code {
	case codes.PermissionDenied, codes.FailedPrecondition, codes.NotFound, codes.InvalidArgument:
		return true
	}
	return false
}

// Classify classifies err, the error of a kernel call made within ctx, the
// caller's context (not the call's own, shorter, timeout):
//
//   - when ctx has ended, its error is kept, so the client sees Canceled or
//     DeadlineExceeded rather than a kernel problem;
//   - a refusal ([IsRefusal]) becomes a [*Refusal];
//   - any other answer, Unavailable and DeadlineExceeded above all, wraps
//     unavailable, the caller's fail-closed sentinel: nothing happens
//     without the kernel's say-so. The kernel's answer is kept in the text
//     for the log.
//
// A nil err is nil.
func Classify(ctx context.Context, err, unavailable error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("kernel call: %w", ctx.Err())
	}
	st := status.Convert(err)
	if IsRefusal(st.Code()) {
		return &Refusal{Status: st}
	}
	return fmt.Errorf("%w (kernel answered %s: %s)", unavailable, st.Code(), st.Message())
}
