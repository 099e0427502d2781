package action

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Errors of an execution, matched with errors.Is. [statuses] maps them to
// gRPC codes and reasons; their messages are what the client sees.
var (
	// ErrInvalidRequest is a malformed request (InvalidArgument).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrCapabilityInvalid is a capability that does not verify against
	// the kernel's key, or binds no well-formed call (PermissionDenied).
	ErrCapabilityInvalid = errors.New("capability does not verify")
	// ErrNotHolder is a capability presented by another agent than the one
	// it was issued to (PermissionDenied).
	ErrNotHolder = errors.New("capability was issued to another agent")
	// ErrKeyMismatch is a request whose idempotency key is not the
	// capability's (InvalidArgument).
	ErrKeyMismatch = errors.New("idempotency key differs from the capability's")
	// ErrKeyReused is an idempotency key already used under another
	// capability or for another call (InvalidArgument). Nothing else
	// happens.
	ErrKeyReused = errors.New("idempotency key already used for a different effect")
	// ErrNoExecutor is a tool this adapter has no executor for
	// (Unimplemented); the message names the tool.
	ErrNoExecutor = errors.New("no executor for tool")
	// ErrArguments is a call the executor's mappings cannot be evaluated
	// over (InvalidArgument); nothing was redeemed or executed.
	ErrArguments = errors.New("the call does not fit the tool's executor: nothing was executed")
	// ErrStateChanged matches a [*StateChangedError] (FailedPrecondition).
	ErrStateChanged = errors.New("record changed since the decision: nothing was executed")
	// ErrStateUnreadable means the record's state version could not be
	// read for the state check; nothing was executed (Unavailable).
	ErrStateUnreadable = errors.New("record state unreadable: nothing was executed")
	// ErrKernelUnreachable means the capability could not be redeemed;
	// nothing was executed (Unavailable). It holds for retries too.
	ErrKernelUnreachable = errors.New("kernel unreachable: nothing was executed")
	// ErrTargetUnavailable means the executor's target could not be
	// reached or did not confirm the effect (Unavailable). A retry with
	// the same idempotency key attempts it again only where that cannot
	// repeat it.
	ErrTargetUnavailable = errors.New("executor target unavailable; retry with the same idempotency key")
	// ErrTargetRefused means the executor's target answered that it did
	// not perform the effect (FailedPrecondition).
	ErrTargetRefused = errors.New("executor target refused the effect")
	// ErrInDoubt means an earlier attempt at the effect may have happened
	// and the target cannot tell this adapter, so it is not attempted
	// again (FailedPrecondition); the verifier's readback decides.
	ErrInDoubt = errors.New("an earlier attempt at this effect may have happened; it is not repeated")
	// ErrNotRecorded means the effect happened but the kernel has not
	// logged its receipt, so the receipt is withheld (Unavailable). A retry
	// with the same key returns the first receipt and never repeats the
	// effect.
	ErrNotRecorded = errors.New("effect committed but not yet recorded; retry with the same idempotency key")
)

// errNothingDone marks an executor error after which the target certainly
// holds nothing of the attempt. When no connection could be made, the
// key's Started row is removed, so that a retry is a first attempt again;
// when the target refused the effect ([ErrTargetRefused]), the key is
// settled as refused and the commitment closed (see [Core.Execute]).
var errNothingDone = errors.New("the target holds nothing of it")

// StateChangedError is a first execution refused because the record the
// capability binds is no longer at its state version: it changed, or is
// gone, since the kernel decided. Nothing was executed. Its message names
// the record and both versions and is what the client sees.
type StateChangedError struct {
	// Record is "source/key".
	Record string
	// Decided is the capability's state version; Current is the record's
	// now, empty when the record is gone.
	Decided, Current string
}

func (e *StateChangedError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("record %s is gone since the decision (%s): nothing was executed", e.Record, e.Decided)
	}
	return fmt.Sprintf("record %s changed since the decision (%s → %s): nothing was executed", e.Record, e.Decided, e.Current)
}

// Is makes errors.Is(err, [ErrStateChanged]) match.
func (e *StateChangedError) Is(target error) bool { return target == ErrStateChanged }

// statuses is the one place execution errors become gRPC statuses, each
// with its ErrorReason; a kernel refusal (e.g. a capability already used
// or revoked by a state change) keeps the kernel's status. A function, not
// a package variable, so no one can change it.
func statuses() service.Statuses {
	return service.Statuses{
		// Sentinels whose own text is the whole client message: causes
		// wrapped with them (the kernel's answer, a signature detail, a
		// target's reply) are logged only.
		{Err: ErrCapabilityInvalid, Code: codes.PermissionDenied, Reason: errorv1.ErrorReason_ERROR_REASON_CAPABILITY_INVALID},
		{Err: ErrNotHolder, Code: codes.PermissionDenied, Reason: errorv1.ErrorReason_ERROR_REASON_CAPABILITY_NOT_HOLDER},
		{Err: ErrKeyMismatch, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_IDEMPOTENCY_KEY_MISMATCH},
		{Err: ErrKeyReused, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_IDEMPOTENCY_KEY_REUSED},
		{Err: ErrStateUnreadable, Code: codes.Unavailable, Reason: errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE},
		{Err: ErrKernelUnreachable, Code: codes.Unavailable, Reason: errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE},
		{Err: ErrInDoubt, Code: codes.FailedPrecondition, Reason: errorv1.ErrorReason_ERROR_REASON_EFFECT_IN_DOUBT},
		{Err: ErrTargetUnavailable, Code: codes.Unavailable, Reason: errorv1.ErrorReason_ERROR_REASON_DEPENDENCY_UNAVAILABLE},
		{Err: ErrTargetRefused, Code: codes.FailedPrecondition, Reason: errorv1.ErrorReason_ERROR_REASON_TARGET_REFUSED},
		{Err: ErrNotRecorded, Code: codes.Unavailable, Reason: errorv1.ErrorReason_ERROR_REASON_EFFECT_NOT_RECORDED},
		// Messages that name what is wrong: the record and both versions,
		// the tool, the mapping, every invalid field.
		{Err: ErrStateChanged, Code: codes.FailedPrecondition, Reason: errorv1.ErrorReason_ERROR_REASON_STATE_VERSION_CHANGED, WithCauses: true},
		{Err: ErrArguments, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_ARGUMENTS_INVALID, WithCauses: true},
		{Err: ErrNoExecutor, Code: codes.Unimplemented, Reason: errorv1.ErrorReason_ERROR_REASON_NO_EXECUTOR, WithCauses: true},
		{Err: ErrInvalidRequest, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, WithCauses: true},
	}
}
