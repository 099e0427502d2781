package service

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/ambitkernel/ambit/sdk/envelope"
)

// Issuer is what every service's core needs to issue signed receipts. A
// core's dependencies embed it; [Process.Issuer] returns the one a binary
// wires in.
type Issuer struct {
	// Identity is the issuer named in the receipts.
	Identity string
	// Signer signs the receipts with the service's key.
	Signer *envelope.Signer
	// Now is the clock (nil: the wall clock).
	Now func() time.Time
	// NewID returns a fresh identifier without prefix (nil:
	// [NewID]).
	NewID func() string
	// Log receives the core's log lines.
	Log *zap.Logger
}

// Validate reports every missing part of i; Now and NewID may be nil.
func (i Issuer) Validate() error {
	var errs []error
	if i.Identity == "" {
		errs = append(errs, errors.New("identity is empty"))
	}
	if i.Signer == nil {
		errs = append(errs, errors.New("no signer"))
	}
	if i.Log == nil {
		errs = append(errs, errors.New("no logger"))
	}
	return errors.Join(errs...)
}

// WithDefaults returns i with the wall clock for a nil Now and [NewID] for
// a nil NewID.
func (i Issuer) WithDefaults() Issuer {
	if i.Now == nil {
		i.Now = time.Now
	}
	if i.NewID == nil {
		i.NewID = NewID
	}
	return i
}
