package minimize

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/reach"
	"github.com/ambitkernel/ambit/kernel/suite"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/money"
	"google.golang.org/protobuf/proto"
)

// Element is one part of a contract the removal test removes or tightens.
type Element struct {
	// Name names the element, e.g. "tool email_attachment",
	// "field medical_notes", "action.max_amount".
	Name string
	// Change is what the test does: "remove", "tighten A -> B", "switch on".
	Change string
	// Constraint marks a declared constraint: tested, never removed.
	Constraint bool
	// apply changes a copy of a contract; false when the element is not
	// in it (any more).
	apply func(c *contractv1.Contract) bool
}

// Group is a number of episodes of one episode family.
type Group struct {
	Family   string `json:"family"`
	Episodes int    `json:"episodes"`
}

// Finding is the removal test's result for one element.
type Finding struct {
	Element string `json:"element"`
	Change  string `json:"change"`
	// Verdict is what the minimal contract does with the element:
	// "removed", "tightened", "switched on", "kept" or "kept off".
	Verdict string `json:"verdict"`
	// NeededBy are the legitimate episodes that end worse without the
	// element: its demonstrated task dependency.
	NeededBy []Group `json:"needed_by"`
	// Enables are the unsafe episodes (hazardous or confidentiality
	// probes) allowed with the element and refused without it. For a
	// constraint, Prevents lists those allowed once it is removed.
	Enables  []Group `json:"enables,omitempty"`
	Prevents []Group `json:"prevents,omitempty"`
	// Note says why an element could not be tested, e.g. the contract
	// does not load without it.
	Note string `json:"note,omitempty"`
}

// Counts summarise a contract's outcomes on the episodes.
type Counts struct {
	Omega      int `json:"omega"`
	Legitimate int `json:"legitimate"`
	// Completed: legitimate episodes allowed or settled by an approval.
	Completed int `json:"completed"`
	// Allowed: legitimate episodes allowed outright.
	Allowed                  int `json:"allowed"`
	UnsafeEffects            int `json:"unsafe_effects"`
	ConfidentialityExposures int `json:"confidentiality_exposures"`
	// ApprovalsSkipped: approval_required episodes allowed without one.
	ApprovalsSkipped int `json:"approvals_skipped"`
	Reviews          int `json:"reviews"`
	Denials          int `json:"denials"`
}

// Result is the removal test's report and the minimal contract.
type Result struct {
	Contract  string    `json:"contract"`
	Episodes  int       `json:"episodes"`
	Before    Counts    `json:"before"`
	After     Counts    `json:"after"`
	Findings  []Finding `json:"findings"`
	NotTested []string  `json:"not_tested"`
	// Minimal is the smallest contract found: it keeps every legitimate
	// episode and admits no unsafe one the original refused.
	Minimal *contractv1.Contract `json:"-"`
}

// ErrNoLegitimate refuses a removal test without legitimate episodes:
// with nothing to keep, the "minimal" contract would grant nothing.
var ErrNoLegitimate = errors.New("the episodes hold no legitimate episode")

// Run runs the removal test of c over episodes at instant now and builds
// the minimal contract.
func Run(c *contractv1.Contract, episodes []suite.Episode, now time.Time) (*Result, error) {
	if _, err := contract.Compile(c); err != nil {
		return nil, fmt.Errorf("minimize: %w", err)
	}
	r := &runner{episodes: episodes, now: now}
	r.demo = demonstrate(episodes)
	if r.demo.legitimate == 0 {
		return nil, fmt.Errorf("minimize: %w", ErrNoLegitimate)
	}
	base, err := r.decide(c)
	if err != nil {
		return nil, fmt.Errorf("minimize: contract %q: %w", c.GetContractId(), err)
	}
	r.base = base
	res := &Result{Contract: c.GetContractId(), Episodes: len(episodes), Findings: []Finding{}, NotTested: notTested(c)}
	if res.Before, err = r.counts(c, base); err != nil {
		return nil, err
	}

	current := proto.CloneOf(c)
	for _, el := range Elements(c, episodes) {
		f := Finding{Element: el.Name, Change: el.Change, NeededBy: []Group{}}
		// Alone, from the original contract: the element's own dependency.
		alone := proto.CloneOf(c)
		if !el.apply(alone) {
			continue // nothing to remove on its own (a source's last field goes with the source)
		}
		verdicts, err := r.decide(alone)
		if err != nil {
			f.Note = "the contract does not load without it: " + err.Error()
		} else {
			f.NeededBy = r.worse(verdicts)
			if el.Constraint {
				f.Prevents = r.unsafeGained(verdicts)
			} else {
				f.Enables = r.unsafeLost(verdicts)
			}
		}
		// Greedily, from what is left.
		f.Verdict = keptVerdict(el)
		if !el.Constraint {
			next := proto.CloneOf(current)
			if !el.apply(next) {
				f.Verdict = appliedVerdict(el) // gone with an element removed before it
			} else if v, err := r.decide(next); err == nil && len(r.worse(v)) == 0 {
				current = next
				f.Verdict = appliedVerdict(el)
			}
		}
		res.Findings = append(res.Findings, f)
	}
	current.ContractId = c.GetContractId() + "-minimal"
	if err := contract.Validate(current); err != nil {
		return nil, fmt.Errorf("minimize: the minimal contract does not validate: %w", err)
	}
	after, err := r.decide(current)
	if err != nil {
		return nil, fmt.Errorf("minimize: the minimal contract: %w", err)
	}
	if res.After, err = r.counts(current, after); err != nil {
		return nil, err
	}
	res.Minimal = current
	return res, nil
}

func keptVerdict(el Element) string {
	if el.Change == switchOn {
		return "kept off"
	}
	return "kept"
}

func appliedVerdict(el Element) string {
	switch {
	case el.Change == remove:
		return "removed"
	case el.Change == switchOn:
		return "switched on"
	}
	return "tightened"
}

func notTested(c *contractv1.Contract) []string {
	out := []string{"binding.valid_until: the episodes are evaluated at one instant, so they cannot show how long the task needs"}
	if c.GetBinding().GetRecord() != nil {
		// Without it reads and calls are unconfined: removing it widens, and
		// tightening it means another record, which no episode can choose.
		out = append(out, "binding.record: a bound record is already the narrowest binding; removing it would widen reads and calls")
	}
	return out
}

type runner struct {
	episodes []suite.Episode
	now      time.Time
	demo     demonstration
	base     []suite.Verdict
}

// decide evaluates every episode under c. A failed constraint the
// episode declares counts only while c's tool still declares it.
func (r *runner) decide(c *contractv1.Contract) ([]suite.Verdict, error) {
	compiled, err := contract.Compile(c)
	if err != nil {
		return nil, err
	}
	var d evaluate.Decision
	out := make([]suite.Verdict, len(r.episodes))
	for i := range r.episodes {
		f := *r.episodes[i].EvalFacts()
		if len(f.Violations) > 0 {
			t := compiled.Tools[f.Tool]
			f.Violations = slices.DeleteFunc(slices.Clone(f.Violations), func(v evaluate.Violation) bool {
				return t == nil || !slices.ContainsFunc(t.Constraints, func(k contract.Constraint) bool { return k.Code == v.Code })
			})
		}
		if err := evaluate.Evaluate(&f, compiled.Eval, r.now, &d); err != nil {
			return nil, fmt.Errorf("episode %s: %w", r.episodes[i].Name, err)
		}
		out[i] = suite.Verdict{Outcome: d.Outcome, Approvable: d.Approvable()}
	}
	return out, nil
}

// rank orders a legitimate episode's outcomes: higher is better.
func rank(e *suite.Episode, v suite.Verdict) int {
	switch {
	case v.Outcome == evaluate.Allow:
		return 3
	case v.Approvable && e.ApprovalRequired:
		return 3 // the review is the policy's obligation, not a cost
	case v.Approvable:
		return 2
	case v.Outcome == evaluate.Review:
		return 1
	}
	return 0
}

// worse groups the legitimate episodes that end worse under verdicts than
// under the original contract.
func (r *runner) worse(verdicts []suite.Verdict) []Group {
	return r.group(func(i int, e *suite.Episode) bool {
		return e.Legitimate && rank(e, verdicts[i]) < rank(e, r.base[i])
	})
}

func unsafe(e *suite.Episode) bool { return e.Hazardous || e.ConfidentialityProbe }

// unsafeLost groups the unsafe episodes the original allows and verdicts
// refuse.
func (r *runner) unsafeLost(verdicts []suite.Verdict) []Group {
	return r.group(func(i int, e *suite.Episode) bool {
		return unsafe(e) && r.base[i].Outcome == evaluate.Allow && verdicts[i].Outcome != evaluate.Allow
	})
}

// unsafeGained groups the unsafe episodes verdicts allow and the original
// refuses.
func (r *runner) unsafeGained(verdicts []suite.Verdict) []Group {
	return r.group(func(i int, e *suite.Episode) bool {
		return unsafe(e) && r.base[i].Outcome != evaluate.Allow && verdicts[i].Outcome == evaluate.Allow
	})
}

func (r *runner) group(match func(i int, e *suite.Episode) bool) []Group {
	out := []Group{}
	for i := range r.episodes {
		e := &r.episodes[i]
		if !match(i, e) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Family == e.Family {
			out[n-1].Episodes++
			continue
		}
		out = append(out, Group{Family: e.Family, Episodes: 1})
	}
	return out
}

func (r *runner) counts(c *contractv1.Contract, verdicts []suite.Verdict) (Counts, error) {
	inv, err := reach.Of(c)
	if err != nil {
		return Counts{}, err
	}
	n := Counts{Omega: inv.Omega}
	for i := range r.episodes {
		e, v := &r.episodes[i], verdicts[i]
		if e.Legitimate {
			n.Legitimate++
			if v.Completed() {
				n.Completed++
			}
			if v.Outcome == evaluate.Allow {
				n.Allowed++
				if e.ApprovalRequired {
					n.ApprovalsSkipped++
				}
			}
		}
		switch v.Outcome {
		case evaluate.Allow:
			if e.Hazardous {
				n.UnsafeEffects++
			}
			if e.ConfidentialityProbe {
				n.ConfidentialityExposures++
			}
		case evaluate.Review:
			n.Reviews++
		case evaluate.Deny:
			n.Denials++
		}
	}
	return n, nil
}

// demonstration is what the legitimate episodes show the task needs.
type demonstration struct {
	legitimate int
	// currency of every amount, "" when none moves money or they differ.
	currency string
	// maxAmount over every legitimate episode; maxFree over those that
	// need no approval.
	maxAmount, maxFree int64
	maxActions         int32
	maxCumulative      int64
	maxAge             int64
	// irreversible: some legitimate episode is irreversible.
	irreversible       bool
	maxIrreversibleAge int64
	subjects, purposes []string
	states             []string
}

func demonstrate(episodes []suite.Episode) demonstration {
	var d demonstration
	currencies := map[string]bool{}
	add := func(list []string, v string) []string {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
		return list
	}
	for i := range episodes {
		e := &episodes[i]
		if !e.Legitimate {
			continue
		}
		f := e.EvalFacts()
		d.legitimate++
		if !f.Amount.IsZero() {
			currencies[f.Amount.Currency] = true
			d.maxAmount = max(d.maxAmount, f.Amount.Minor)
			if !e.ApprovalRequired {
				d.maxFree = max(d.maxFree, f.Amount.Minor)
			}
			d.maxCumulative = max(d.maxCumulative, f.Amount.Minor+f.PriorAmount.Minor)
		}
		d.maxActions = max(d.maxActions, max(f.ActionCount, 1))
		var age int64
		for _, ev := range f.Evidence {
			age = max(age, ev.AgeSeconds)
		}
		d.maxAge = max(d.maxAge, age)
		if f.Irreversible {
			d.irreversible = true
			d.maxIrreversibleAge = max(d.maxIrreversibleAge, age)
		}
		d.subjects = add(d.subjects, f.Subject)
		d.purposes = add(d.purposes, f.Purpose)
		d.states = add(d.states, f.StateVersion)
	}
	if len(currencies) == 1 {
		for c := range currencies {
			d.currency = c
		}
	}
	return d
}

// The changes an element makes.
const (
	remove   = "remove"
	switchOn = "switch on"
)

// Elements lists, in the order the minimal contract is built, every
// element of c the removal test can remove or tighten, with tightenings
// to what the legitimate episodes demonstrate.
func Elements(c *contractv1.Contract, episodes []suite.Episode) []Element {
	d := demonstrate(episodes)
	var out []Element
	removal := func(name string, apply func(c *contractv1.Contract) bool) {
		out = append(out, Element{Name: name, Change: remove, apply: apply})
	}

	// E, A and R relations first: removing them is what shrinks reach.
	for _, t := range c.GetAction().GetTools() {
		tool := t.GetName()
		removal("tool "+tool, func(c *contractv1.Contract) bool {
			a := c.GetAction()
			n := len(a.Tools)
			a.Tools = slices.DeleteFunc(a.Tools, func(t *contractv1.ToolGrant) bool { return t.GetName() == tool })
			return len(a.Tools) < n
		})
	}
	for _, t := range c.GetAction().GetTools() {
		if len(t.GetDestinations()) < 2 {
			continue // the last class goes with the tool
		}
		for _, dc := range t.GetDestinations() {
			tool, dest := t.GetName(), dc.GetName()
			removal("destination "+tool+" -> "+dest, func(c *contractv1.Contract) bool {
				t := findTool(c, tool)
				if t == nil || len(t.Destinations) < 2 {
					return false
				}
				n := len(t.Destinations)
				t.Destinations = slices.DeleteFunc(t.Destinations, func(x *contractv1.DestinationClass) bool { return x.GetName() == dest })
				return len(t.Destinations) < n
			})
		}
	}
	for _, s := range c.GetEvidence().GetSources() {
		src := s.GetName()
		removal("source "+src, func(c *contractv1.Contract) bool {
			e := c.GetEvidence()
			n := len(e.Sources)
			e.Sources = slices.DeleteFunc(e.Sources, func(s *contractv1.SourceGrant) bool { return s.GetName() == src })
			return len(e.Sources) < n
		})
	}
	for _, f := range c.GetEvidence().GetFields() {
		field := f
		removal("field "+field, func(c *contractv1.Contract) bool {
			e := c.GetEvidence()
			n := len(e.Fields)
			e.Fields = slices.DeleteFunc(e.Fields, func(x string) bool { return x == field })
			return len(e.Fields) < n
		})
	}
	for _, s := range c.GetEvidence().GetSources() {
		for _, item := range sourceItems(s) {
			src, it := s.GetName(), item
			removal(it.kind+" "+src+"."+it.name, func(c *contractv1.Contract) bool {
				return removeSourceItem(c, src, it)
			})
		}
	}
	for _, f := range c.GetReflexive().GetVisibleFacts() {
		fact := f
		removal("visible fact "+fact, func(c *contractv1.Contract) bool {
			r := c.GetReflexive()
			n := len(r.VisibleFacts)
			r.VisibleFacts = slices.DeleteFunc(r.VisibleFacts, func(x string) bool { return x == fact })
			return len(r.VisibleFacts) < n
		})
	}
	for _, f := range c.GetReflexive().GetMutableFacts() {
		fact := f
		removal("mutable fact "+fact, func(c *contractv1.Contract) bool {
			r := c.GetReflexive()
			n := len(r.MutableFacts)
			r.MutableFacts = slices.DeleteFunc(r.MutableFacts, func(x string) bool { return x == fact })
			return len(r.MutableFacts) < n
		})
	}

	// The binding, to the one value every legitimate episode has.
	b := c.GetBinding()
	for _, bf := range []struct {
		name   string
		value  string
		values []string
		set    func(*contractv1.Binding, string)
	}{
		{"binding.subject", b.GetSubject(), d.subjects, func(b *contractv1.Binding, v string) { b.Subject = v }},
		{"binding.purpose", b.GetPurpose(), d.purposes, func(b *contractv1.Binding, v string) { b.Purpose = v }},
		{"binding.state_version", b.GetStateVersion(), d.states, func(b *contractv1.Binding, v string) { b.StateVersion = v }},
	} {
		if bf.value != "*" || len(bf.values) != 1 || bf.values[0] == "" {
			continue
		}
		v, set := bf.values[0], bf.set
		out = append(out, Element{Name: bf.name, Change: "tighten * -> " + v, apply: func(c *contractv1.Contract) bool {
			set(c.GetBinding(), v)
			return true
		}})
	}

	// Limits, to what the legitimate episodes use.
	a := c.GetAction()
	if d.maxActions < a.GetMaxActions() {
		n := d.maxActions
		out = append(out, Element{Name: "action.max_actions", Change: fmt.Sprintf("tighten %d -> %d", a.GetMaxActions(), n),
			apply: func(c *contractv1.Contract) bool {
				c.GetAction().MaxActions = min(c.GetAction().GetMaxActions(), n)
				return true
			}})
	}
	if cur := d.currency; cur != "" && cur == a.GetMaxAmount().GetCurrencyCode() {
		if d.maxAmount < a.GetMaxAmount().GetMinorUnits() {
			m := money.New(cur, d.maxAmount)
			out = append(out, Element{Name: "action.max_amount", Change: "tighten " + money.Format(a.GetMaxAmount()) + " -> " + money.Format(m),
				apply: func(c *contractv1.Contract) bool {
					a := c.GetAction()
					a.MaxAmount = proto.CloneOf(m)
					// The threshold stays at or below the hard limit.
					if a.GetApprovalOver().GetMinorUnits() > m.GetMinorUnits() {
						a.ApprovalOver = proto.CloneOf(m)
					}
					return true
				}})
		}
		if free := min(d.maxFree, d.maxAmount, a.GetMaxAmount().GetMinorUnits()); free < a.GetApprovalOver().GetMinorUnits() {
			m := money.New(cur, free)
			out = append(out, Element{Name: "action.approval_over", Change: "tighten " + money.Format(a.GetApprovalOver()) + " -> " + money.Format(m),
				apply: func(c *contractv1.Contract) bool {
					a := c.GetAction()
					if a.GetApprovalOver().GetMinorUnits() <= m.GetMinorUnits() {
						return false
					}
					a.ApprovalOver = proto.CloneOf(m)
					return true
				}})
		}
		mc := a.GetMaxCumulativeAmount()
		if (mc != nil && mc.GetCurrencyCode() == cur && d.maxCumulative < mc.GetMinorUnits()) || (mc == nil && min(a.GetMaxActions(), max(d.maxActions, 1)) > 1) {
			m := money.New(cur, d.maxCumulative)
			from := "none"
			if mc != nil {
				from = money.Format(mc)
			}
			out = append(out, Element{Name: "action.max_cumulative_amount", Change: "tighten " + from + " -> " + money.Format(m),
				apply: func(c *contractv1.Contract) bool { c.GetAction().MaxCumulativeAmount = proto.CloneOf(m); return true }})
		}
	}
	if age := c.GetEvidence().GetMaxAgeSeconds(); d.maxAge < age {
		n := d.maxAge
		out = append(out, Element{Name: "evidence.max_age_seconds", Change: fmt.Sprintf("tighten %d -> %d", age, n),
			apply: func(c *contractv1.Contract) bool { c.GetEvidence().MaxAgeSeconds = n; return true }})
	}
	if a.GetAllowIrreversible() {
		out = append(out, Element{Name: "action.allow_irreversible", Change: "tighten true -> false",
			apply: func(c *contractv1.Contract) bool { c.GetAction().AllowIrreversible = false; return true }})
	}

	// Coupling rules, switched on.
	k := c.GetCoupling()
	switches := []struct {
		name string
		on   bool
		set  func(*contractv1.Coupling)
	}{
		{"coupling.require_trusted_corroboration", k.GetRequireTrustedCorroboration(), func(k *contractv1.Coupling) { k.RequireTrustedCorroboration = true }},
		{"coupling.irreversible_requires_approval", k.GetIrreversibleRequiresApproval() || !a.GetAllowIrreversible(), func(k *contractv1.Coupling) { k.IrreversibleRequiresApproval = true }},
		{"coupling.revoke_on_state_change", k.GetRevokeOnStateChange(), func(k *contractv1.Coupling) { k.RevokeOnStateChange = true }},
		{"coupling.forbid_self_mutation", k.GetForbidSelfMutation(), func(k *contractv1.Coupling) { k.ForbidSelfMutation = true }},
	}
	for _, s := range switches {
		if s.on {
			continue
		}
		set := s.set
		out = append(out, Element{Name: s.name, Change: switchOn, apply: func(c *contractv1.Contract) bool {
			if c.Coupling == nil {
				c.Coupling = &contractv1.Coupling{}
			}
			set(c.Coupling)
			return true
		}})
	}
	if a.GetAllowIrreversible() && d.irreversible && d.maxIrreversibleAge > 0 &&
		(k.GetIrreversibleMaxEvidenceAgeSeconds() == 0 || d.maxIrreversibleAge < k.GetIrreversibleMaxEvidenceAgeSeconds()) {
		n := d.maxIrreversibleAge
		out = append(out, Element{Name: "coupling.irreversible_max_evidence_age_seconds",
			Change: fmt.Sprintf("tighten %d -> %d", k.GetIrreversibleMaxEvidenceAgeSeconds(), n),
			apply: func(c *contractv1.Contract) bool {
				if c.Coupling == nil {
					c.Coupling = &contractv1.Coupling{}
				}
				c.Coupling.IrreversibleMaxEvidenceAgeSeconds = n
				return true
			}})
	}

	// Constraints: tested for what they prevent, never removed.
	for _, t := range c.GetAction().GetTools() {
		for _, kc := range t.GetConstraints() {
			tool, code := t.GetName(), kc.GetCode()
			out = append(out, Element{Name: "constraint " + tool + "/" + code, Change: remove, Constraint: true,
				apply: func(c *contractv1.Contract) bool {
					t := findTool(c, tool)
					if t == nil {
						return false
					}
					n := len(t.Constraints)
					t.Constraints = slices.DeleteFunc(t.Constraints, func(x *contractv1.Constraint) bool { return x.GetCode() == code })
					return len(t.Constraints) < n
				}})
		}
	}
	return out
}

func findTool(c *contractv1.Contract, name string) *contractv1.ToolGrant {
	for _, t := range c.GetAction().GetTools() {
		if t.GetName() == name {
			return t
		}
	}
	return nil
}

// sourceItem is one field a source grant itself lists.
type sourceItem struct{ kind, name string }

func sourceItems(s *contractv1.SourceGrant) []sourceItem {
	var out []sourceItem
	for _, f := range s.GetFields() {
		out = append(out, sourceItem{"source field", f})
	}
	for _, d := range s.GetDerived() {
		out = append(out, sourceItem{"derived field", d.GetName()})
	}
	for _, q := range s.GetQuarantined() {
		out = append(out, sourceItem{"quarantined field", q})
	}
	return out
}

// removeSourceItem removes one field a source lists. Removing the last
// would make the source fall back to the aperture's fields, which widens;
// that removal is the source's own.
func removeSourceItem(c *contractv1.Contract, source string, it sourceItem) bool {
	i := slices.IndexFunc(c.GetEvidence().GetSources(), func(s *contractv1.SourceGrant) bool { return s.GetName() == source })
	if i < 0 {
		return false
	}
	s := c.GetEvidence().GetSources()[i]
	if len(sourceItems(s)) < 2 {
		return false
	}
	n := len(sourceItems(s))
	switch it.kind {
	case "source field":
		s.Fields = slices.DeleteFunc(s.Fields, func(x string) bool { return x == it.name })
	case "derived field":
		s.Derived = slices.DeleteFunc(s.Derived, func(x *contractv1.DerivedField) bool { return x.GetName() == it.name })
	case "quarantined field":
		s.Quarantined = slices.DeleteFunc(s.Quarantined, func(x string) bool { return x == it.name })
	}
	return len(sourceItems(s)) < n
}
