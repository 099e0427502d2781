package verify

import (
	"errors"

	"google.golang.org/grpc/codes"

	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
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
	// the action adapter's key (InvalidArgument).
	ErrEffectInvalid = errors.New("effect receipt does not verify")
	// ErrReceiptMismatch is an effect receipt that is not the capability's
	// effect: another capability, task, key, call or destination
	// (InvalidArgument). The message lists every difference.
	ErrReceiptMismatch = errors.New("effect receipt does not match the capability")
	// ErrArgumentsInvalid is a capability whose call its tool's readback
	// cannot be made for: a declared argument mapping does not evaluate
	// over it (InvalidArgument). Nothing was read.
	ErrArgumentsInvalid = errors.New("the capability's call does not fit its tool's readback: nothing was verified")
	// ErrNoReadback is a tool the verifier has no readback for
	// (Unimplemented).
	ErrNoReadback = errors.New("no readback is declared for the tool")
	// ErrSourceUnreadable means the system of record could not be read;
	// nothing was concluded (Unavailable).
	ErrSourceUnreadable = errors.New("readback source unreadable: nothing was verified")
	// ErrNotRecorded means the kernel did not log the readback receipt, so
	// it is withheld (Unavailable).
	ErrNotRecorded = errors.New("kernel unreachable: the readback was not recorded")
)

// statuses is the one place verification errors become gRPC statuses, each
// with its declared reason; a kernel refusal keeps the kernel's status. A
// function, not a package variable, so no one can change it.
func statuses() service.Statuses {
	return service.Statuses{
		// The sentinel's text only unless WithCauses: causes are logged,
		// not sent.
		{Err: ErrCapabilityInvalid, Code: codes.PermissionDenied, Reason: errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID},
		{Err: ErrEffectInvalid, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_RECEIPT_INVALID},
		// The differences are between envelopes the client sent.
		{Err: ErrReceiptMismatch, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_RECEIPT_MISMATCH, WithCauses: true},
		{Err: ErrArgumentsInvalid, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_ARGUMENTS_INVALID},
		{Err: ErrNoReadback, Code: codes.Unimplemented, Reason: errorv1.ErrorReason_ERROR_REASON_NO_READBACK, WithCauses: true},
		{Err: ErrSourceUnreadable, Code: codes.Unavailable, Reason: errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE},
		{Err: ErrNotRecorded, Code: codes.Unavailable, Reason: errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE},
		{Err: ErrInvalidRequest, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, WithCauses: true},
	}
}
