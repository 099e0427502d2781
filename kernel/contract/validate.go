package contract

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/money"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// ErrInvalid marks a contract or proposal that is malformed or
// contradictory.
var ErrInvalid = errors.New("invalid")

// SelfFacts are the reflexive facts a contract may name.
var selfFacts = []string{"capabilities", "uncertainty", "commitments", "expiry", "policy_thresholds", "credentials", "contract"}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// Validate refuses a malformed or contradictory contract with an error that
// names the offending field.
func Validate(c *contractv1.Contract) error {
	if err := checkEnums(c.ProtoReflect()); err != nil {
		return err
	}
	if c.GetContractId() == "" {
		return invalid("contract_id", "must not be empty")
	}
	b := c.GetBinding()
	switch {
	case b == nil:
		return invalid("binding", "missing")
	case b.GetTaskId() == "":
		return invalid("binding.task_id", "must not be empty")
	case b.GetSubject() == "":
		return invalid("binding.subject", "must not be empty (use \"*\" for any subject)")
	case b.GetPurpose() == "":
		return invalid("binding.purpose", "must not be empty (use \"*\" for any purpose)")
	case b.GetStateVersion() == "":
		return invalid("binding.state_version", "must not be empty (use \"*\" for any state)")
	case b.GetValidUntil() == nil:
		return invalid("binding.valid_until", "missing")
	}
	if err := b.GetValidUntil().CheckValid(); err != nil {
		return invalid("binding.valid_until", "%v", err)
	}
	if r := b.GetRecord(); r != nil {
		switch {
		case r.GetSource() == "" || r.GetKey() == "":
			return invalid("binding.record", "needs both source and key")
		case strings.Contains(r.GetSource(), "/"):
			return invalid("binding.record.source", "%s", slashInSource(r.GetSource()))
		}
	}

	e := c.GetEvidence()
	if e == nil {
		return invalid("evidence", "missing")
	}
	if err := checkNames("evidence.fields", e.GetFields(), nil); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, s := range e.GetSources() {
		f := fmt.Sprintf("evidence.sources[%d]", i)
		switch {
		case s.GetName() == "":
			return invalid(f+".name", "must not be empty")
		case strings.Contains(s.GetName(), "/"):
			return invalid(f+".name", "%s", slashInSource(s.GetName()))
		case seen[s.GetName()]:
			return invalid(f+".name", "duplicate source %q", s.GetName())
		case s.GetProvenance() == contractv1.Provenance_PROVENANCE_UNSPECIFIED:
			return invalid(f+".provenance", "must be set for source %q", s.GetName())
		case s.GetProvenance() == contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING && len(s.GetFields()) > 0:
			// Coupling rule 1: content that may carry instructions enters
			// only as a derived value or as quarantined text.
			return invalid(f+".fields", "source %q is instruction-bearing: grant its fields as derived values or quarantined text, not raw", s.GetName())
		}
		seen[s.GetName()] = true
		if err := checkNames(f+".fields", s.GetFields(), nil); err != nil {
			return err
		}
		if err := checkNames(f+".quarantined", s.GetQuarantined(), nil); err != nil {
			return err
		}
		var derived []string
		for _, d := range s.GetDerived() {
			derived = append(derived, d.GetName())
		}
		if err := checkNames(f+".derived", derived, nil); err != nil {
			return err
		}
		if err := checkNames(f, SourceFields(s), nil); err != nil {
			return invalid(f, "a field is granted twice (raw, derived or quarantined): %v", err)
		}
	}
	if e.GetMaxAgeSeconds() < 0 {
		return invalid("evidence.max_age_seconds", "must not be negative, got %d", e.GetMaxAgeSeconds())
	}

	a := c.GetAction()
	if a == nil {
		return invalid("action", "missing")
	}
	var tools []string
	for _, t := range a.GetTools() {
		tools = append(tools, t.GetName())
	}
	if err := checkNames("action.tools", tools, nil); err != nil {
		return err
	}
	if err := checkLimit("action.max_amount", a.GetMaxAmount()); err != nil {
		return err
	}
	if err := checkLimit("action.approval_over", a.GetApprovalOver()); err != nil {
		return err
	}
	if a.GetApprovalOver().GetCurrencyCode() != a.GetMaxAmount().GetCurrencyCode() {
		return invalid("action.approval_over.currency_code", "%q differs from max_amount's %q",
			a.GetApprovalOver().GetCurrencyCode(), a.GetMaxAmount().GetCurrencyCode())
	}
	if a.GetApprovalOver().GetMinorUnits() > a.GetMaxAmount().GetMinorUnits() {
		return invalid("action.approval_over", "approval threshold %s is above the hard limit %s",
			money.Format(a.GetApprovalOver()), money.Format(a.GetMaxAmount()))
	}
	if a.GetMaxActions() < 0 {
		return invalid("action.max_actions", "must not be negative, got %d", a.GetMaxActions())
	}
	if mc := a.GetMaxCumulativeAmount(); mc != nil {
		if err := checkLimit("action.max_cumulative_amount", mc); err != nil {
			return err
		}
		if mc.GetCurrencyCode() != a.GetMaxAmount().GetCurrencyCode() {
			return invalid("action.max_cumulative_amount.currency_code", "%q differs from max_amount's %q",
				mc.GetCurrencyCode(), a.GetMaxAmount().GetCurrencyCode())
		}
	}

	r := c.GetReflexive()
	if r == nil {
		return invalid("reflexive", "missing")
	}
	if err := checkNames("reflexive.visible_facts", r.GetVisibleFacts(), selfFacts); err != nil {
		return err
	}
	if err := checkNames("reflexive.mutable_facts", r.GetMutableFacts(), selfFacts); err != nil {
		return err
	}
	if c.GetCoupling().GetIrreversibleMaxEvidenceAgeSeconds() < 0 {
		return invalid("coupling.irreversible_max_evidence_age_seconds", "must not be negative")
	}
	return nil
}

// ValidateFacts refuses malformed self-declared facts.
func ValidateFacts(f *contractv1.Facts) error {
	if err := checkEnums(f.ProtoReflect()); err != nil {
		return err
	}
	if f.GetAmount() != nil {
		if err := money.CheckPositive(f.GetAmount()); err != nil {
			return invalid("amount", "%v", err)
		}
	}
	if f.GetPriorAmount() != nil {
		if err := money.Check(f.GetPriorAmount()); err != nil {
			return invalid("prior_amount", "%v", err)
		}
		if f.GetAmount() == nil || f.GetPriorAmount().GetCurrencyCode() != f.GetAmount().GetCurrencyCode() {
			return invalid("prior_amount.currency_code", "must equal the amount's")
		}
	}
	if f.GetActionCount() < 0 {
		return invalid("action_count", "must not be negative")
	}
	for i, e := range f.GetEvidence() {
		if e.GetSource() == "" {
			return invalid(fmt.Sprintf("evidence[%d].source", i), "must not be empty")
		}
		if e.GetAgeSeconds() < 0 {
			return invalid(fmt.Sprintf("evidence[%d].age_seconds", i), "must not be negative")
		}
	}
	return nil
}

func checkLimit(field string, m *contractv1.Money) error {
	if m == nil {
		return invalid(field, "missing")
	}
	if err := money.Check(m); err != nil {
		return invalid(field, "%v", err)
	}
	return nil
}

// checkNames refuses empty or duplicate names and, when known is given,
// names outside it.
func checkNames(field string, names, known []string) error {
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		f := fmt.Sprintf("%s[%d]", field, i)
		if n == "" {
			return invalid(f, "must not be empty")
		}
		if seen[n] {
			return invalid(f, "duplicate %q", n)
		}
		seen[n] = true
		if known != nil && !slices.Contains(known, n) {
			return invalid(f, "unknown value %q (known: %v)", n, known)
		}
	}
	return nil
}

// checkEnums refuses enum numbers the schema does not define: protobuf
// enums are open, so a decoder accepts 7 where only 0..3 exist.
func checkEnums(m protoreflect.Message) error { return checkMessageEnums(m, nil) }

// fieldPath is where a value sits in the message checked, built on the
// stack as the walk descends and spelled out only for an error: a
// contract's argument schemas alone hold hundreds of values.
type fieldPath struct {
	parent *fieldPath
	// name is a field's name; in an element of the list or map its
	// parent names, index or key says which.
	name  string
	elem  bool
	index int
	key   protoreflect.MapKey
}

func (p *fieldPath) String() string {
	switch {
	case p == nil:
		return ""
	case p.elem && p.key.IsValid():
		return fmt.Sprintf("%s[%v]", p.parent, p.key.Interface())
	case p.elem:
		return fmt.Sprintf("%s[%d]", p.parent, p.index)
	case p.parent == nil:
		return p.name
	default:
		return p.parent.String() + "." + p.name
	}
}

func checkMessageEnums(m protoreflect.Message, at *fieldPath) error {
	// Argument schemas are trees of google.protobuf.Value, walked through
	// their Go types: by reflection, the walk cost most of a compile.
	switch v := m.Interface().(type) {
	case *structpb.Value:
		return checkStructValue(v, at)
	case *structpb.Struct:
		return checkStruct(v, at)
	case *structpb.ListValue:
		return checkListValue(v, at)
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		field := fieldPath{parent: at, name: string(fd.Name())}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := range l.Len() {
				if err := checkValue(fd, l.Get(j), &fieldPath{parent: &field, elem: true, index: j}); err != nil {
					return err
				}
			}
		case fd.IsMap():
			var err error
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				err = checkValue(fd.MapValue(), mv, &fieldPath{parent: &field, elem: true, key: k})
				return err == nil
			})
			if err != nil {
				return err
			}
		default:
			if err := checkValue(fd, v, &field); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, at *fieldPath) error {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByNumber(v.Enum()) == nil {
			return invalid(at.String(), "unknown enum value %d for %s", v.Enum(), fd.Enum().FullName())
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkMessageEnums(v.Message(), at)
	}
	return nil
}

// checkStructValue is checkMessageEnums of a google.protobuf.Value: its
// one enum is null_value, the rest of it values of its own kind.
func checkStructValue(v *structpb.Value, at *fieldPath) error {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		if nullValues.ByNumber(k.NullValue.Number()) == nil {
			return invalid((&fieldPath{parent: at, name: "null_value"}).String(), "unknown enum value %d for %s", k.NullValue, nullValueName)
		}
	case *structpb.Value_StructValue:
		return checkStruct(k.StructValue, &fieldPath{parent: at, name: "struct_value"})
	case *structpb.Value_ListValue:
		return checkListValue(k.ListValue, &fieldPath{parent: at, name: "list_value"})
	}
	return nil
}

func checkStruct(s *structpb.Struct, at *fieldPath) error {
	field := fieldPath{parent: at, name: "fields"}
	for k, v := range s.GetFields() {
		if err := checkStructValue(v, &fieldPath{parent: &field, elem: true, key: protoreflect.ValueOfString(k).MapKey()}); err != nil {
			return err
		}
	}
	return nil
}

func checkListValue(l *structpb.ListValue, at *fieldPath) error {
	field := fieldPath{parent: at, name: "values"}
	for i, v := range l.GetValues() {
		if err := checkStructValue(v, &fieldPath{parent: &field, elem: true, index: i}); err != nil {
			return err
		}
	}
	return nil
}

var (
	nullValues    = structpb.NullValue(0).Descriptor().Values()
	nullValueName = structpb.NullValue(0).Descriptor().FullName()
)

// slashInSource explains why a source name may not contain "/": a record
// is named "source/key" and cut at its first "/", so source "a/b" with key
// "c" and source "a" with key "b/c" would be one record, and evidence read
// from one would count for the other.
func slashInSource(name string) string {
	return fmt.Sprintf("source %q contains '/': a record is named \"source/key\", so a source name may not contain '/'", name)
}
