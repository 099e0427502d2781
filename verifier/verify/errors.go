package verify

import (
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/ambitkernel/ambit/sdk/service"
)

// Errors of a verification, matched with errors.Is. [statuses] maps them
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

// statuses is the one place verification errors become gRPC statuses; a
// kernel refusal keeps the kernel's status. A function, not a package
// variable, so no one can change it.
func statuses() service.Statuses {
	return service.Statuses{
		// The sentinel's text only: causes are logged, not sent.
		{Err: ErrCapabilityInvalid, Code: codes.PermissionDenied},
		{Err: ErrEffectInvalid, Code: codes.PermissionDenied},
		{Err: ErrLedgerUnreadable, Code: codes.Unavailable},
		{Err: ErrNotRecorded, Code: codes.Unavailable},
		{Err: ErrInvalidRequest, Code: codes.InvalidArgument, WithCauses: true},
	}
}
