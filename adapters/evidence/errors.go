package evidence

import (
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Errors of a read, matched with errors.Is. [statuses] maps them to gRPC.
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

// statuses is the one place read errors become gRPC statuses; a kernel
// refusal keeps the kernel's status, which names the refused field or
// source. A function, not a package variable, so no one can change it.
func statuses() service.Statuses {
	return service.Statuses{
		// The cause (the kernel's own answer) is logged, not sent.
		{Err: ErrKernelUnreachable, Code: codes.Unavailable},
		{Err: ErrNotRecorded, Code: codes.Unavailable},
		{Err: ErrInvalidRequest, Code: codes.InvalidArgument, WithCauses: true},
		{Err: claims.ErrUnknownField, Code: codes.InvalidArgument, WithCauses: true},
		{Err: ErrUnknownSource, Code: codes.NotFound, WithCauses: true},
		{Err: claims.ErrNotFound, Code: codes.NotFound, WithCauses: true},
	}
}
