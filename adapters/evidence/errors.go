package evidence

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/adapters/claims"
)

// Errors of a read, matched with errors.Is. [toStatus] maps them to gRPC.
var (
	// ErrInvalidRequest is a malformed request (InvalidArgument).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnknownSource is a source this adapter does not serve (NotFound).
	ErrUnknownSource = errors.New("unknown source")
	// ErrKernelUnreachable means the kernel could not be asked or could not
	// log the receipt; the read fails closed (Unavailable).
	ErrKernelUnreachable = errors.New("kernel unreachable: nothing was read")
	// ErrNotRecorded means the kernel did not log the evidence receipt, so
	// nothing was released (Unavailable).
	ErrNotRecorded = errors.New("kernel unreachable: the read was not recorded and nothing was released")
)

// KernelRefusal is a refusal by the kernel (PermissionDenied,
// FailedPrecondition, NotFound, InvalidArgument). Its status reaches the
// client unchanged: the kernel's message names the refused field or source.
type KernelRefusal struct {
	Status *status.Status
}

func (e *KernelRefusal) Error() string {
	return fmt.Sprintf("kernel refused: %s: %s", e.Status.Code(), e.Status.Message())
}

// GRPCStatus is the kernel's status.
func (e *KernelRefusal) GRPCStatus() *status.Status { return e.Status }

// fromKernel classifies a failed kernel call; unreachable is the error for
// a kernel that gave no usable answer. ctx is the caller's context: when it
// has ended, its own error is kept so the client sees Canceled or
// DeadlineExceeded rather than a kernel problem.
func fromKernel(ctx context.Context, err, unreachable error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kernel call: %w", ctx.Err())
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.PermissionDenied, codes.FailedPrecondition, codes.NotFound, codes.InvalidArgument:
		return &KernelRefusal{Status: st}
	}
	// Unavailable and DeadlineExceeded above all, but any other answer also
	// fails closed: nothing is read without the kernel's say-so.
	return fmt.Errorf("%w (kernel answered %s: %s)", unreachable, st.Code(), st.Message())
}

// toStatus is the one place read errors become gRPC statuses. Anything it
// does not recognise is returned as is: the server's interceptor logs it and
// the client sees only "internal error".
func toStatus(err error) error {
	var refusal *KernelRefusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refusal):
		return refusal.Status.Err()
	case errors.Is(err, ErrKernelUnreachable):
		// The cause (the kernel's own answer) is logged, not sent.
		return status.Error(codes.Unavailable, ErrKernelUnreachable.Error())
	case errors.Is(err, ErrNotRecorded):
		return status.Error(codes.Unavailable, ErrNotRecorded.Error())
	case errors.Is(err, ErrInvalidRequest), errors.Is(err, claims.ErrUnknownField):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrUnknownSource), errors.Is(err, claims.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	}
	return err
}
