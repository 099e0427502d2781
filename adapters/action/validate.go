package action

import (
	"fmt"
	"strings"

	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/money"
)

// ValidateExecute checks the shape of an execute request. An action type
// this adapter has no executor for is [ErrNoExecutor]; any other problem is
// [ErrInvalidRequest], naming every problem found.
func ValidateExecute(req *actionv1.ExecuteRequest) error {
	var problems []string
	if req.GetCapability() == nil {
		problems = append(problems, "capability is required")
	}
	switch kind := req.GetAction().GetKind().(type) {
	case *contractv1.Action_Refund:
		r := kind.Refund
		if r.GetClaimId() == "" {
			problems = append(problems, "refund.claim_id is required")
		}
		if r.GetPayeeId() == "" {
			problems = append(problems, "refund.payee_id is required")
		}
		if err := money.CheckPositive(r.GetAmount()); err != nil {
			problems = append(problems, "refund.amount: "+err.Error())
		}
	case nil:
		if req.GetAction() == nil {
			problems = append(problems, "action is required")
		} else {
			problems = append(problems, "action has no type")
		}
	default:
		return fmt.Errorf("%w %s", ErrNoExecutor, ActionType(req.GetAction()))
	}
	if req.GetIdempotencyKey() == "" {
		problems = append(problems, "idempotency_key is required")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(problems, "; "))
	}
	return nil
}

// ActionType is the type name of an action: the name of its case of
// Action.kind, e.g. "refund"; empty when unset.
func ActionType(a *contractv1.Action) string {
	m := a.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("kind"))
	if fd == nil {
		return ""
	}
	return string(fd.Name())
}
