package action

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors of an execution, matched with errors.Is. [toStatus] maps them to
// gRPC; their messages are what the client sees.
var (
	// ErrInvalidRequest is a malformed request (InvalidArgument).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrNoExecutor is an action type this adapter cannot execute
	// (Unimplemented).
	ErrNoExecutor = errors.New("no executor for action type")
	// ErrCapabilityInvalid is a capability that does not verify against
	// the kernel's key (PermissionDenied).
	ErrCapabilityInvalid = errors.New("capability does not verify")
	// ErrKeyMismatch is a request whose idempotency key is not the
	// capability's (InvalidArgument).
	ErrKeyMismatch = errors.New("idempotency key differs from the capability's")
	// ErrKeyReused is an idempotency key that already paid for another
	// effect (InvalidArgument). Nothing else happens.
	ErrKeyReused = errors.New("idempotency key already used for a different effect")
	// ErrEffectDiffers is a request for an effect other than the one the
	// capability binds (PermissionDenied).
	ErrEffectDiffers = errors.New("requested effect differs from the capability")
	// ErrExpired is a capability past its expiry (FailedPrecondition).
	ErrExpired = errors.New("capability expired")
	// ErrKernelUnreachable means the capability could not be redeemed;
	// nothing was executed (Unavailable). It holds for retries too.
	ErrKernelUnreachable = errors.New("kernel unreachable: nothing was executed")
	// ErrNotRecorded means the payment is committed but the kernel has not
	// logged its receipt, so the receipt is withheld (Unavailable). A retry
	// with the same key returns the first receipt and never pays twice.
	ErrNotRecorded = errors.New("effect committed but not yet recorded; retry with the same idempotency key")
)

// KernelRefusal is a refusal by the kernel (FailedPrecondition,
// PermissionDenied, NotFound, InvalidArgument), e.g. a capability already
// used or revoked by a state change. Its status reaches the client
// unchanged.
type KernelRefusal struct {
	Status *status.Status
}

func (e *KernelRefusal) Error() string {
	return fmt.Sprintf("kernel refused: %s: %s", e.Status.Code(), e.Status.Message())
}

// GRPCStatus is the kernel's status.
func (e *KernelRefusal) GRPCStatus() *status.Status { return e.Status }

// fromKernel classifies a failed redemption. When the caller's own context
// has ended, its error is kept (Canceled or DeadlineExceeded to the client).
func fromKernel(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kernel call: %w", ctx.Err())
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.PermissionDenied, codes.FailedPrecondition, codes.NotFound, codes.InvalidArgument:
		return &KernelRefusal{Status: st}
	}
	// Unavailable and DeadlineExceeded above all; any other answer fails
	// closed as well: nothing is executed without a redemption.
	return fmt.Errorf("%w (kernel answered %s: %s)", ErrKernelUnreachable, st.Code(), st.Message())
}

// toStatus is the one place execution errors become gRPC statuses. Unknown
// errors are returned as they are: the server's interceptor logs them and
// the client sees only "internal error".
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var refusal *KernelRefusal
	if errors.As(err, &refusal) {
		return refusal.Status.Err()
	}
	// Sentinels whose own text is the whole client message: causes wrapped
	// with them (the kernel's answer, a signature detail) are logged only.
	for _, e := range []struct {
		err  error
		code codes.Code
	}{
		{ErrCapabilityInvalid, codes.PermissionDenied},
		{ErrEffectDiffers, codes.PermissionDenied},
		{ErrKeyMismatch, codes.InvalidArgument},
		{ErrKeyReused, codes.InvalidArgument},
		{ErrExpired, codes.FailedPrecondition},
		{ErrKernelUnreachable, codes.Unavailable},
		{ErrNotRecorded, codes.Unavailable},
	} {
		if errors.Is(err, e.err) {
			return status.Error(e.code, e.err.Error())
		}
	}
	switch {
	case errors.Is(err, ErrInvalidRequest):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrNoExecutor):
		return status.Error(codes.Unimplemented, err.Error())
	}
	return err
}
