package contract

import (
	"fmt"
	"strings"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/memo"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/expr"
)

// Compile validates c, compiles its tools, schemas and expressions, and
// turns it into the evaluator's form. A declaration that does not compile
// is an error naming its place.
func Compile(c *contractv1.Contract) (*Compiled, error) { return compile(c, nil) }

// maxShared bounds the tools and the derived fields a [Compiler] keeps
// compiled for the contracts it compiles next.
const maxShared = 1024

// Compiler compiles contracts as [Compile] does, and shares what their
// identical declarations compile to. Contracts made from one template (a
// task's own contract, say) differ in their binding, not in their tools:
// a process holding thousands of them holds each tool's schema and
// expressions once, and compiles them once. Every check that reads the
// rest of a contract (a tool's record source is one of its sources) runs
// for each contract. It is safe for concurrent use; it keeps the last
// maxShared tools and derived fields it compiled.
type Compiler struct {
	tools   *memo.Map[*Tool]
	derived *memo.Map[*expr.Program]
}

// NewCompiler returns a compiler that shares nothing yet.
func NewCompiler() *Compiler {
	return &Compiler{tools: memo.New[*Tool](maxShared), derived: memo.New[*expr.Program](maxShared)}
}

// Compile is [Compile], sharing what an earlier contract's identical
// declarations compiled to.
func (cm *Compiler) Compile(c *contractv1.Contract) (*Compiled, error) { return compile(c, cm) }

// compile is Compile, sharing through cm unless it is nil.
func compile(c *contractv1.Contract, cm *Compiler) (*Compiled, error) {
	if err := Validate(c); err != nil {
		return nil, fmt.Errorf("compile contract %q: %w", c.GetContractId(), err)
	}
	tools, err := compileTools(c, cm)
	if err != nil {
		return nil, fmt.Errorf("compile contract %q: %w", c.GetContractId(), err)
	}
	derived, err := compileDerived(c, cm)
	if err != nil {
		return nil, fmt.Errorf("compile contract %q: %w", c.GetContractId(), err)
	}
	return &Compiled{Proto: c, Eval: evaluatorForm(c), Tools: tools, Derived: derived}, nil
}

// evaluatorForm maps a validated contract onto the evaluator's input.
func evaluatorForm(c *contractv1.Contract) *evaluate.Contract {
	b, e, a, r, k := c.GetBinding(), c.GetEvidence(), c.GetAction(), c.GetReflexive(), c.GetCoupling()
	out := &evaluate.Contract{
		Subject:           b.GetSubject(),
		Purpose:           b.GetPurpose(),
		StateVersion:      b.GetStateVersion(),
		ValidUntil:        b.GetValidUntil().AsTime(),
		Fields:            clone(e.GetFields()),
		MaxAgeSeconds:     e.GetMaxAgeSeconds(),
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
	if r := b.GetRecord(); r != nil {
		out.Record = r.GetSource() + "/" + r.GetKey()
	}
	for _, s := range e.GetSources() {
		out.Sources = append(out.Sources, evaluate.Source{Name: s.GetName(), Provenance: evaluate.Provenance(s.GetProvenance()), Fields: SourceFields(s)})
	}
	for _, t := range a.GetTools() {
		tool := evaluate.Tool{Name: t.GetName()}
		for _, d := range t.GetDestinations() {
			tool.Destinations = append(tool.Destinations, d.GetName())
		}
		out.Tools = append(out.Tools, tool)
	}
	return out
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
		Subject:               p.GetSubject(),
		Purpose:               p.GetPurpose(),
		StateVersion:          p.GetStateVersion(),
		CurrentStateVersion:   p.GetCurrentStateVersion(),
		Tool:                  p.GetTool(),
		Destination:           p.GetDestination(),
		Amount:                Money(p.GetAmount()),
		ActionCount:           p.GetActionCount(),
		PriorAmount:           Money(p.GetPriorAmount()),
		Irreversible:          p.GetIrreversible(),
		ApprovalPresent:       p.GetApprovalPresent(),
		SelfQueries:           p.GetSelfQueries(),
		SelfMutations:         p.GetSelfMutations(),
		Record:                p.GetRecord(),
		DestinationUnresolved: p.GetDestinationUnresolved(),
	}
	for _, e := range p.GetEvidence() {
		f.Evidence = append(f.Evidence, evaluate.Evidence{
			Source:      e.GetSource(),
			Record:      e.GetRecord(),
			Fields:      e.GetFields(),
			AgeSeconds:  e.GetAgeSeconds(),
			Provenance:  evaluate.Provenance(e.GetProvenance()),
			Quarantined: e.GetQuarantined(),
		})
	}
	for _, v := range p.GetViolations() {
		f.Violations = append(f.Violations, evaluate.Violation{Code: v.GetCode(), Message: v.GetMessage()})
	}
	return f
}

// FactsProto maps evaluator facts to the wire, e.g. into a decision receipt.
func FactsProto(f *evaluate.Facts) *contractv1.Facts {
	p := &contractv1.Facts{
		Subject:               f.Subject,
		Purpose:               f.Purpose,
		StateVersion:          f.StateVersion,
		CurrentStateVersion:   f.CurrentStateVersion,
		Tool:                  f.Tool,
		Destination:           f.Destination,
		Amount:                MoneyProto(f.Amount),
		ActionCount:           f.ActionCount,
		PriorAmount:           MoneyProto(f.PriorAmount),
		Irreversible:          f.Irreversible,
		ApprovalPresent:       f.ApprovalPresent,
		SelfQueries:           clone(f.SelfQueries),
		SelfMutations:         clone(f.SelfMutations),
		Record:                f.Record,
		DestinationUnresolved: f.DestinationUnresolved,
	}
	for _, e := range f.Evidence {
		p.Evidence = append(p.Evidence, &contractv1.EvidenceItem{
			Source:      e.Source,
			Record:      e.Record,
			Fields:      clone(e.Fields),
			AgeSeconds:  e.AgeSeconds,
			Provenance:  contractv1.Provenance(e.Provenance),
			Quarantined: e.Quarantined,
		})
	}
	for _, v := range f.Violations {
		p.Violations = append(p.Violations, &contractv1.Violation{Code: v.Code, Message: v.Message})
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

// ReasonProto maps one reason to the wire. The evaluator's codes are the
// wire enum's numbers.
func ReasonProto(r evaluate.Reason) *contractv1.Reason {
	return &contractv1.Reason{
		Aperture:   contractv1.Aperture(r.Aperture),
		Code:       contractv1.ReasonCode(r.Code),
		Detail:     r.Detail(),
		Constraint: r.Constraint,
	}
}

// CodeName is a reason code's stable name without the enum prefix, e.g.
// "AMOUNT_EXCEEDS_HARD_LIMIT".
func CodeName(c contractv1.ReasonCode) string {
	return strings.TrimPrefix(c.String(), "REASON_CODE_")
}

func clone(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}
