package evidence

import (
	"errors"

	"google.golang.org/grpc/codes"

	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Errors of a read, matched with errors.Is. [statuses] maps them to gRPC.
// Their messages name fields, columns, sources and keys, never values.
var (
	// ErrInvalidRequest is a malformed request (InvalidArgument).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnknownSource is a source this adapter does not serve (NotFound).
	ErrUnknownSource = errors.New("unknown source")
	// ErrUnknownField is a requested field that is neither a declared
	// column of the source nor a derived field (InvalidArgument).
	ErrUnknownField = errors.New("unknown field")
	// ErrNotFound means no record has the key (NotFound).
	ErrNotFound = errors.New("record not found")
	// ErrOutsideTask means the record's confining field does not hold the
	// task's record key: the read is refused and nothing released
	// (PermissionDenied).
	ErrOutsideTask = errors.New("record outside the task")
	// ErrUndeclaredColumn means the contract confines or derives a field
	// from a column the source does not declare, so it cannot be honoured
	// here (FailedPrecondition).
	ErrUndeclaredColumn = errors.New("the source does not declare a column the grant needs")
	// ErrDerived means a derived field could not be computed from the
	// record; nothing is released (FailedPrecondition).
	ErrDerived = errors.New("derived field cannot be computed")
	// ErrSourceUnavailable means the source could not be read; nothing
	// was released (Unavailable).
	ErrSourceUnavailable = errors.New("source unavailable: nothing was read")
	// ErrKernelUnreachable means the kernel could not be asked; the read
	// fails closed (Unavailable).
	ErrKernelUnreachable = errors.New("kernel unreachable: nothing was read")
	// ErrNotRecorded means the kernel did not log the evidence receipt, so
	// nothing was released (Unavailable).
	ErrNotRecorded = errors.New("kernel unreachable: the read was not recorded and nothing was released")
)

// statuses is the one place read errors become gRPC statuses; a kernel
// refusal keeps the kernel's status and reason. A function, not a package
// variable, so no one can change it.
func statuses() service.Statuses {
	const (
		invalidRequest = errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST
		unknownSource  = errorv1.ErrorReason_ERROR_REASON_UNKNOWN_SOURCE
		unknownField   = errorv1.ErrorReason_ERROR_REASON_UNKNOWN_FIELD
		notFound       = errorv1.ErrorReason_ERROR_REASON_RECORD_NOT_FOUND
		outsideTask    = errorv1.ErrorReason_ERROR_REASON_RECORD_OUTSIDE_TASK
		invalidGrant   = errorv1.ErrorReason_ERROR_REASON_INVALID_CONTRACT
		kernelDown     = errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE
		dependencyDown = errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE
	)
	return service.Statuses{
		// Causes (a kernel's or a source's own answer) are logged, not sent.
		{Err: ErrKernelUnreachable, Code: codes.Unavailable, Reason: kernelDown},
		{Err: ErrNotRecorded, Code: codes.Unavailable, Reason: kernelDown},
		{Err: ErrSourceUnavailable, Code: codes.Unavailable, Reason: dependencyDown},
		{Err: ErrInvalidRequest, Code: codes.InvalidArgument, Reason: invalidRequest, WithCauses: true},
		{Err: ErrUnknownField, Code: codes.InvalidArgument, Reason: unknownField, WithCauses: true},
		{Err: ErrUnknownSource, Code: codes.NotFound, Reason: unknownSource, WithCauses: true},
		{Err: ErrNotFound, Code: codes.NotFound, Reason: notFound, WithCauses: true},
		{Err: ErrOutsideTask, Code: codes.PermissionDenied, Reason: outsideTask, WithCauses: true},
		{Err: ErrUndeclaredColumn, Code: codes.FailedPrecondition, Reason: unknownField, WithCauses: true},
		{Err: ErrDerived, Code: codes.FailedPrecondition, Reason: invalidGrant, WithCauses: true},
	}
}
