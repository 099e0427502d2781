package evidence

import (
	"fmt"
	"strings"

	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
)

// MaxFields is the most fields one read may ask for.
const MaxFields = 64

// ValidateRead checks the shape of a read request: every problem is named,
// not just the first. The error wraps [ErrInvalidRequest].
func ValidateRead(req *evidencev1.ReadRequest) error {
	var problems []string
	if req.GetTaskId() == "" {
		problems = append(problems, "task_id is required")
	}
	if req.GetSource() == "" {
		problems = append(problems, "source is required")
	}
	if req.GetRecordKey() == "" {
		problems = append(problems, "record_key is required")
	}
	fields := req.GetFields()
	switch {
	case len(fields) == 0:
		problems = append(problems, "fields: at least one field is required")
	case len(fields) > MaxFields:
		problems = append(problems, fmt.Sprintf("fields: %d requested, at most %d", len(fields), MaxFields))
	}
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		switch {
		case f == "":
			problems = append(problems, fmt.Sprintf("fields[%d] is empty", i))
		case seen[f]:
			problems = append(problems, fmt.Sprintf("fields: %q is repeated", f))
		}
		seen[f] = true
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(problems, "; "))
	}
	return nil
}
