package authority

import (
	"errors"
	"fmt"
)

// Refusal kinds. A refusal changes nothing.
var (
	// ErrInvalid: the request is malformed (InvalidArgument).
	ErrInvalid = errors.New("invalid argument")
	// ErrDenied: the request is outside the caller's grant (PermissionDenied).
	ErrDenied = errors.New("permission denied")
	// ErrStale: the request depends on state that no longer holds
	// (FailedPrecondition).
	ErrStale = errors.New("failed precondition")
	// ErrNotFound: the named object does not exist (NotFound).
	ErrNotFound = errors.New("not found")
	// ErrExists: the object exists with other content (AlreadyExists).
	ErrExists = errors.New("already exists")
	// ErrExhausted: the caller sent too many requests (ResourceExhausted).
	ErrExhausted = errors.New("resource exhausted")
)

// Refusal is a refusal a caller can act on: a kind, a stable
// machine-readable reason and a message for people.
type Refusal struct {
	Kind    error
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Unwrap lets errors.Is match the kind.
func (r *Refusal) Unwrap() error { return r.Kind }

func refuse(kind error, reason, format string, args ...any) error {
	return &Refusal{Kind: kind, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
