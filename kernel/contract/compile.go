package contract

import (
	"fmt"
	"slices"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
)

// Compile validates c and turns it into the evaluator's form.
func Compile(c *contractv1.Contract) (*evaluate.Contract, error) {
	if err := Validate(c); err != nil {
		return nil, fmt.Errorf("compile contract %q: %w", c.GetContractId(), err)
	}
	b, e, a, r, k := c.GetBinding(), c.GetEvidence(), c.GetAction(), c.GetReflexive(), c.GetCoupling()
	out := &evaluate.Contract{
		Subject:           b.GetSubject(),
		Purpose:           b.GetPurpose(),
		StateVersion:      b.GetStateVersion(),
		ValidUntil:        b.GetValidUntil().AsTime(),
		Fields:            clone(e.GetFields()),
		MaxAgeSeconds:     e.GetMaxAgeSeconds(),
		ActionTypes:       clone(a.GetActionTypes()),
		Destinations:      clone(a.GetDestinations()),
		MaxAmount:         Money(a.GetMaxAmount()),
		ApprovalOver:      Money(a.GetApprovalOver()),
		MaxActions:        a.GetMaxActions(),
		MaxCumulative:     Money(a.GetMaxCumulativeAmount()),
		AllowIrreversible: a.GetAllowIrreversible(),
		VisibleFacts:      clone(r.GetVisibleFacts()),
		MutableFacts:      clone(r.GetMutableFacts()),
		Coupling: evaluate.Coupling{
			RequireTrustedCorroboration:  k.GetRequireTrustedCorroboration(),
			IrreversibleMaxAgeSeconds:    k.GetIrreversibleMaxEvidenceAgeSeconds(),
			IrreversibleRequiresApproval: k.GetIrreversibleRequiresApproval(),
			RevokeOnStateChange:          k.GetRevokeOnStateChange(),
			ForbidSelfMutation:           k.GetForbidSelfMutation(),
		},
	}
	for _, s := range e.GetSources() {
		out.Sources = append(out.Sources, evaluate.Source{Name: s.GetName(), Provenance: evaluate.Provenance(s.GetProvenance())})
	}
	return out, nil
}

// IsIrreversible reports whether the contract declares an action type's
// effects irreversible.
func IsIrreversible(c *contractv1.Contract, actionType string) bool {
	return slices.Contains(c.GetAction().GetIrreversibleActionTypes(), actionType)
}

// Money maps a wire amount; nil maps to the zero (no amount).
func Money(m *contractv1.Money) evaluate.Money {
	if m == nil {
		return evaluate.Money{}
	}
	return evaluate.Money{Currency: m.GetCurrencyCode(), Minor: m.GetMinorUnits()}
}

// MoneyProto maps an evaluator amount to the wire; zero maps to nil.
func MoneyProto(m evaluate.Money) *contractv1.Money {
	if m.IsZero() {
		return nil
	}
	return &contractv1.Money{CurrencyCode: m.Currency, MinorUnits: m.Minor}
}

// Facts maps self-declared wire facts onto the evaluator's input.
func Facts(p *contractv1.Facts) evaluate.Facts {
	f := evaluate.Facts{
		Subject:             p.GetSubject(),
		Purpose:             p.GetPurpose(),
		StateVersion:        p.GetStateVersion(),
		CurrentStateVersion: p.GetCurrentStateVersion(),
		ActionType:          p.GetActionType(),
		Destination:         p.GetDestination(),
		Amount:              Money(p.GetAmount()),
		ActionCount:         p.GetActionCount(),
		PriorAmount:         Money(p.GetPriorAmount()),
		Irreversible:        p.GetIrreversible(),
		ApprovalPresent:     p.GetApprovalPresent(),
		SelfQueries:         p.GetSelfQueries(),
		SelfMutations:       p.GetSelfMutations(),
	}
	for _, e := range p.GetEvidence() {
		f.Evidence = append(f.Evidence, evaluate.Evidence{
			Source:     e.GetSource(),
			Fields:     e.GetFields(),
			AgeSeconds: e.GetAgeSeconds(),
			Provenance: evaluate.Provenance(e.GetProvenance()),
		})
	}
	return f
}

// FactsProto maps evaluator facts to the wire, e.g. into a decision receipt.
func FactsProto(f *evaluate.Facts) *contractv1.Facts {
	p := &contractv1.Facts{
		Subject:             f.Subject,
		Purpose:             f.Purpose,
		StateVersion:        f.StateVersion,
		CurrentStateVersion: f.CurrentStateVersion,
		ActionType:          f.ActionType,
		Destination:         f.Destination,
		Amount:              MoneyProto(f.Amount),
		ActionCount:         f.ActionCount,
		PriorAmount:         MoneyProto(f.PriorAmount),
		Irreversible:        f.Irreversible,
		ApprovalPresent:     f.ApprovalPresent,
		SelfQueries:         clone(f.SelfQueries),
		SelfMutations:       clone(f.SelfMutations),
	}
	for _, e := range f.Evidence {
		p.Evidence = append(p.Evidence, &contractv1.EvidenceItem{
			Source:     e.Source,
			Fields:     clone(e.Fields),
			AgeSeconds: e.AgeSeconds,
			Provenance: contractv1.Provenance(e.Provenance),
		})
	}
	return p
}

// DecisionProto maps a decision to the wire.
func DecisionProto(d *evaluate.Decision) *contractv1.Decision {
	out := &contractv1.Decision{
		Outcome: contractv1.Outcome(d.Outcome),
		Reasons: make([]*contractv1.Reason, len(d.Reasons)),
	}
	for i, r := range d.Reasons {
		out.Reasons[i] = ReasonProto(r)
	}
	return out
}

// ReasonProto maps one reason to the wire.
func ReasonProto(r evaluate.Reason) *contractv1.Reason {
	return &contractv1.Reason{
		Aperture: contractv1.Aperture(r.Aperture),
		Code:     r.Code.String(),
		Detail:   r.Detail(),
	}
}

// ActionType is the type name of a typed action ("refund"), or "" if unset.
func ActionType(a *contractv1.Action) string {
	od := a.ProtoReflect().Descriptor().Oneofs().ByName("kind")
	if fd := a.ProtoReflect().WhichOneof(od); fd != nil {
		return string(fd.Name())
	}
	return ""
}

func clone(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}
