package evidence

import (
	"fmt"
	"strings"

	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
)

// Limits of a read request, as proto/ambit/evidence/v1 declares them.
const (
	// MaxFields is the most fields one read may ask for.
	MaxFields  = 64
	maxID      = 256 // task_id, record_key, purpose
	maxName    = 128 // source, each field
	maxProblem = 8   // problems named in one refusal
)

// ValidateRead checks the shape of a read request: every problem is named,
// not just the first. The error wraps [ErrInvalidRequest].
func ValidateRead(req *evidencev1.ReadRequest) error {
	var problems []string
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"task_id", req.GetTaskId(), maxID},
		{"source", req.GetSource(), maxName},
		{"record_key", req.GetRecordKey(), maxID},
		{"purpose", req.GetPurpose(), maxID},
	} {
		switch {
		case f.value == "":
			problems = append(problems, f.name+" is required")
		case len(f.value) > f.max:
			problems = append(problems, fmt.Sprintf("%s is longer than %d bytes", f.name, f.max))
		}
	}
	fields := req.GetFields()
	switch {
	case len(fields) == 0:
		problems = append(problems, "fields: at least one field is required")
	case len(fields) > MaxFields:
		problems = append(problems, fmt.Sprintf("fields: %d requested, at most %d", len(fields), MaxFields))
		fields = nil // each of too many is not worth naming
	}
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		switch {
		case f == "":
			problems = append(problems, fmt.Sprintf("fields[%d] is empty", i))
		case len(f) > maxName:
			problems = append(problems, fmt.Sprintf("fields[%d] is longer than %d bytes", i, maxName))
		case seen[f]:
			problems = append(problems, fmt.Sprintf("fields: %q is repeated", f))
		}
		seen[f] = true
	}
	if len(problems) > maxProblem {
		problems = append(problems[:maxProblem], fmt.Sprintf("and %d more", len(problems)-maxProblem))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(problems, "; "))
	}
	return nil
}
