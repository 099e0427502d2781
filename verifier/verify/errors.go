package verify

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors of a verification, matched with errors.Is. [toStatus] maps them
// to gRPC; their messages are what the client sees.
var (
	// ErrInvalidRequest is a malformed request (InvalidArgument).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrCapabilityInvalid is a capability that does not verify against
	// the kernel's key (PermissionDenied).
	ErrCapabilityInvalid = errors.New("capability does not verify")
	// ErrEffectInvalid is an effect receipt that does not verify against
	// the action adapter's key (PermissionDenied).
	ErrEffectInvalid = errors.New("effect receipt does not verify")
	// ErrLedgerUnreadable means the system of record could not be read;
	// nothing was concluded (Unavailable).
	ErrLedgerUnreadable = errors.New("payments ledger unreadable: nothing was verified")
	// ErrNotRecorded means the kernel did not log the readback receipt, so
	// it is withheld (Unavailable).
	ErrNotRecorded = errors.New("kernel unreachable: the readback was not recorded")
)

// KernelRefusal is a refusal by the kernel (PermissionDenied,
// FailedPrecondition, NotFound, InvalidArgument). Its status reaches the
// client unchanged.
type KernelRefusal struct {
	Status *status.Status
}

func (e *KernelRefusal) Error() string {
	return fmt.Sprintf("kernel refused: %s: %s", e.Status.Code(), e.Status.Message())
}

// GRPCStatus is the kernel's status.
func (e *KernelRefusal) GRPCStatus() *status.Status { return e.Status }

// fromKernel classifies a failed RecordReadback. When the caller's own
// context has ended, its error is kept.
func fromKernel(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kernel call: %w", ctx.Err())
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.PermissionDenied, codes.FailedPrecondition, codes.NotFound, codes.InvalidArgument:
		return &KernelRefusal{Status: st}
	}
	return fmt.Errorf("%w (kernel answered %s: %s)", ErrNotRecorded, st.Code(), st.Message())
}

// toStatus is the one place verification errors become gRPC statuses.
// Unknown errors are returned as they are: the server's interceptor logs
// them and the client sees only "internal error".
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var refusal *KernelRefusal
	if errors.As(err, &refusal) {
		return refusal.Status.Err()
	}
	for _, e := range []struct {
		err  error
		code codes.Code
	}{
		{ErrCapabilityInvalid, codes.PermissionDenied},
		{ErrEffectInvalid, codes.PermissionDenied},
		{ErrLedgerUnreadable, codes.Unavailable},
		{ErrNotRecorded, codes.Unavailable},
	} {
		if errors.Is(err, e.err) {
			// The sentinel's text only: causes are logged, not sent.
			return status.Error(e.code, e.err.Error())
		}
	}
	if errors.Is(err, ErrInvalidRequest) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return err
}
