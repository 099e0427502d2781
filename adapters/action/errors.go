package action

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/ambitkernel/ambit/sdk/service"
)

// Errors of an execution, matched with errors.Is. [statuses] maps them to
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
	// ErrNotHolder is a capability presented by another agent than the one
	// it was issued to (PermissionDenied).
	ErrNotHolder = errors.New("capability was issued to another agent")
	// ErrExpired is a capability past its expiry (FailedPrecondition).
	ErrExpired = errors.New("capability expired")
	// ErrKernelUnreachable means the capability could not be redeemed;
	// nothing was executed (Unavailable). It holds for retries too.
	ErrKernelUnreachable = errors.New("kernel unreachable: nothing was executed")
	// ErrNotRecorded means the payment is committed but the kernel has not
	// logged its receipt, so the receipt is withheld (Unavailable). A retry
	// with the same key returns the first receipt and never pays twice.
	ErrNotRecorded = errors.New("effect committed but not yet recorded; retry with the same idempotency key")
	// ErrStateChanged matches a [*StateChangedError] (FailedPrecondition).
	ErrStateChanged = errors.New("claim changed since the decision: nothing was executed")
	// ErrClaimsUnreadable means the claims database could not be read for
	// the freshness check; nothing was executed (Unavailable).
	ErrClaimsUnreadable = errors.New("claims database unreadable: nothing was executed")
)

// StateChangedError is a first execution refused because the refund's
// claim is no longer at the state version the capability binds: its row
// changed, or is gone, since the kernel decided. Nothing was executed. Its
// message names the claim and both versions and is what the client sees.
type StateChangedError struct {
	ClaimID string
	// Decided is the capability's state version; Current is the claim's
	// now, empty when the claim is gone.
	Decided, Current string
}

func (e *StateChangedError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("claim %s is gone since the decision (%s): nothing was executed", e.ClaimID, e.Decided)
	}
	return fmt.Sprintf("claim %s changed since the decision (%s → %s): nothing was executed", e.ClaimID, e.Decided, e.Current)
}

// Is makes errors.Is(err, [ErrStateChanged]) match.
func (e *StateChangedError) Is(target error) bool { return target == ErrStateChanged }

// statuses is the one place execution errors become gRPC statuses; a
// kernel refusal (e.g. a capability already used or revoked by a state
// change) keeps the kernel's status. A function, not a package variable, so
// no one can change it.
func statuses() service.Statuses {
	return service.Statuses{
		// Sentinels whose own text is the whole client message: causes
		// wrapped with them (the kernel's answer, a signature detail) are
		// logged only.
		{Err: ErrCapabilityInvalid, Code: codes.PermissionDenied},
		{Err: ErrEffectDiffers, Code: codes.PermissionDenied},
		{Err: ErrNotHolder, Code: codes.PermissionDenied},
		{Err: ErrKeyMismatch, Code: codes.InvalidArgument},
		{Err: ErrKeyReused, Code: codes.InvalidArgument},
		{Err: ErrExpired, Code: codes.FailedPrecondition},
		{Err: ErrClaimsUnreadable, Code: codes.Unavailable},
		// The message names the claim and both versions.
		{Err: ErrStateChanged, Code: codes.FailedPrecondition, WithCauses: true},
		{Err: ErrKernelUnreachable, Code: codes.Unavailable},
		{Err: ErrNotRecorded, Code: codes.Unavailable},
		{Err: ErrInvalidRequest, Code: codes.InvalidArgument, WithCauses: true},
		{Err: ErrNoExecutor, Code: codes.Unimplemented, WithCauses: true},
	}
}
