package action

import (
	"fmt"
	"strings"

	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
)

// MaxKeyLen is the longest idempotency key, as the API declares it.
const MaxKeyLen = 128

// ValidateExecute checks the shape of an execute request, naming every
// problem found; the error wraps [ErrInvalidRequest]. What the capability
// says is checked by [Core.Execute], once it verifies.
func ValidateExecute(req *actionv1.ExecuteRequest) error {
	var problems []string
	if req.GetCapability() == nil {
		problems = append(problems, "capability is required")
	}
	switch key := req.GetIdempotencyKey(); {
	case key == "":
		problems = append(problems, "idempotency_key is required")
	case len(key) > MaxKeyLen:
		problems = append(problems, fmt.Sprintf("idempotency_key: %d bytes, at most %d", len(key), MaxKeyLen))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(problems, "; "))
	}
	return nil
}
