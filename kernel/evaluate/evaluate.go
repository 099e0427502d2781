package evaluate

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrInvalidFacts marks input that is not a proposal at all (a non-positive
// or malformed amount, a negative age or count). It is an error, never a
// decision.
var ErrInvalidFacts = errors.New("invalid facts")

// maxReasons bounds the reasons one evaluation can produce; the fixed arrays
// below keep Evaluate free of allocations.
const maxReasons = 64

// maxFixedReasons bounds the reasons other than failed constraints; the
// rest of the buffer holds those.
const maxFixedReasons = 28

// Decision is the verdict with every reason: deny reasons first, then review
// reasons, each group in evaluation order. Reuse one Decision across calls.
type Decision struct {
	Outcome Outcome
	Reasons []Reason

	// items backs the reasons' item lists.
	items []string
	// buf is the evaluator's working space, allocated on the first
	// evaluation and reused by later ones into the same Decision; a
	// Clone leaves it behind, so a decision kept is only its reasons.
	*buf
}

// buf holds the reasons found while evaluating, in fixed arrays so that
// evaluating does not allocate.
type buf struct {
	deny, review [maxReasons]Reason
	nDeny        int
	nReview      int
}

func (d *Decision) reset() {
	d.Outcome = 0
	d.Reasons = d.Reasons[:0]
	if d.buf == nil {
		d.buf = new(buf)
	}
	d.nDeny, d.nReview = 0, 0
	d.items = d.items[:0]
}

func (d *Decision) addDeny(a Aperture, c Code, items []string) {
	d.deny[d.nDeny] = Reason{Aperture: a, Code: c, Items: items}
	d.nDeny++
}

func (d *Decision) addReview(a Aperture, c Code, items []string) {
	d.review[d.nReview] = Reason{Aperture: a, Code: c, Items: items}
	d.nReview++
}

// Approvable reports whether the decision is a REVIEW that an independent
// approval alone would settle.
func (d *Decision) Approvable() bool {
	if d.Outcome != Review {
		return false
	}
	for _, r := range d.Reasons {
		if !r.IsApprovable() {
			return false
		}
	}
	return true
}

// Clone returns a copy that does not alias d's buffers.
func (d *Decision) Clone() *Decision {
	out := &Decision{Outcome: d.Outcome, Reasons: make([]Reason, len(d.Reasons))}
	for i, r := range d.Reasons {
		r.Items = append([]string(nil), r.Items...)
		out.Reasons[i] = r
	}
	return out
}

// Evaluate decides facts f under contract c at instant now, writing the
// result into d. It returns an error wrapping ErrInvalidFacts, and leaves no
// decision, when f is not a well-formed proposal. It never changes f or c.
func Evaluate(f *Facts, c *Contract, now time.Time, d *Decision) error {
	d.reset()
	if err := checkFacts(f); err != nil {
		return err
	}
	actionCount := f.ActionCount
	if actionCount == 0 {
		actionCount = 1 // the seed's default: this proposal is the task's first action
	}

	// Only a canonical contract grants anything.
	if f.ContractClass != "" {
		d.addReview(Ledger, CodeContractNotCanonical, d.sorted([]string{f.ContractClass}))
	}
	// Binding and freshness are checked before any effect.
	if now.After(c.ValidUntil) {
		d.addReview(Binding, CodeContractExpired, nil)
	}
	if c.Subject != "*" && f.Subject != c.Subject {
		d.addDeny(Binding, CodeSubjectMismatch, nil)
	}
	if c.Purpose != "*" && f.Purpose != c.Purpose {
		d.addDeny(Binding, CodePurposeMismatch, nil)
	}
	if stateChanged(f, c) {
		d.addReview(Binding, CodeStateVersionChanged, nil)
	}
	if c.Record != "" && f.Record != c.Record {
		d.addDeny(Binding, CodeRecordOutsideBinding, nil)
	}

	// E: epistemic aperture. Every check runs so that every reason is
	// reported, not just the first.
	if items := d.fieldsOutside(f.Evidence, c); len(items) > 0 {
		d.addDeny(Epistemic, CodeFieldsOutsideGrant, items)
	}
	if items := d.sourcesOutside(f.Evidence, c.Sources); len(items) > 0 {
		d.addDeny(Epistemic, CodeSourceOutsideGrant, items)
	}
	switch {
	case c.Record != "" && !citesRecord(f.Evidence, c.Record):
		d.addReview(Epistemic, CodeRecordEvidenceMissing, nil)
	case f.StateVersion == "" && c.StateVersion != "*":
		// Nothing trusted read the record: its state is unknown, which is
		// not the same as changed.
		d.addReview(Epistemic, CodeNoTrustedEvidence, nil)
	}
	if oldest(f.Evidence) > c.MaxAgeSeconds {
		d.addReview(Epistemic, CodeEvidenceTooOld, nil)
	}
	// Rule 1: provenance changes authority.
	if c.Coupling.RequireTrustedCorroboration && !f.ApprovalPresent && !hasTrusted(f.Evidence, c.Sources) {
		d.addReview(Epistemic, CodeUncorroboratedEvidence, nil)
	}
	// Rule 2: irreversibility raises the evidence burden.
	if f.Irreversible && c.AllowIrreversible && c.Coupling.IrreversibleMaxAgeSeconds > 0 &&
		oldest(f.Evidence) > c.Coupling.IrreversibleMaxAgeSeconds {
		d.addReview(Epistemic, CodeIrreversibleEvidenceTooOld, nil)
	}

	// A: executive aperture.
	tool := toolIndex(c.Tools, f.Tool)
	if tool < 0 {
		d.addDeny(Executive, CodeToolOutsideGrant, nil)
	}
	switch {
	case f.DestinationUnresolved:
		d.addReview(Executive, CodeDestinationUnresolved, nil)
	case !destinationGranted(c.Tools, tool, f.Destination):
		d.addDeny(Executive, CodeDestinationOutsideGrant, nil)
	}
	// Every failed constraint is its own reason.
	for i := range f.Violations {
		if d.nDeny < maxReasons-maxFixedReasons {
			d.deny[d.nDeny] = Reason{Aperture: Executive, Code: CodeConstraintViolated,
				Constraint: f.Violations[i].Code, Message: f.Violations[i].Message}
			d.nDeny++
		}
	}
	if !f.Amount.IsZero() {
		switch {
		case f.Amount.Currency != c.MaxAmount.Currency:
			d.addDeny(Executive, CodeCurrencyOutsideGrant, nil)
		case f.Amount.Minor > c.MaxAmount.Minor:
			d.addDeny(Executive, CodeAmountExceedsHardLimit, nil)
		case f.Amount.Minor > c.ApprovalOver.Minor && !f.ApprovalPresent:
			d.addReview(Executive, CodeApprovalRequired, nil)
		}
	}
	if actionCount > c.MaxActions {
		d.addDeny(Executive, CodeActionCountExceedsGrant, nil)
	}
	if exceedsCumulative(f, c) {
		d.addDeny(Executive, CodeCumulativeAmountExceedsGrant, nil)
	}
	if f.Irreversible && !c.AllowIrreversible {
		d.addDeny(Executive, CodeIrreversibleNotPermitted, nil)
	} else if f.Irreversible && c.Coupling.IrreversibleRequiresApproval && !f.ApprovalPresent {
		d.addReview(Executive, CodeIrreversibleApprovalRequired, nil)
	}

	// R: reflexive aperture. Reading a bounded operational fact may be
	// useful; rewriting the authority boundary is never implied by model
	// output.
	if items := d.outside(f.SelfQueries, c.VisibleFacts); len(items) > 0 {
		d.addDeny(Reflexive, CodeSelfFactsOutsideView, items)
	}
	if items := d.outside(f.SelfMutations, c.MutableFacts); len(items) > 0 {
		d.addDeny(Reflexive, CodeSelfMutationsOutsideGrant, items)
	} else if c.Coupling.ForbidSelfMutation && len(f.SelfMutations) > 0 {
		// Rule 4: even a granted mutation is a boundary change, which only
		// governance may make.
		d.addDeny(Reflexive, CodeSelfMutationForbidden, d.sorted(f.SelfMutations))
	}

	switch {
	case d.nDeny > 0:
		d.Outcome = Deny
		d.Reasons = append(d.Reasons, d.deny[:d.nDeny]...)
		d.Reasons = append(d.Reasons, d.review[:d.nReview]...)
	case d.nReview > 0:
		d.Outcome = Review
		d.Reasons = append(d.Reasons, d.review[:d.nReview]...)
	default:
		d.Outcome = Allow
		d.Reasons = append(d.Reasons, Reason{Aperture: Whole, Code: CodeAllAperturesSatisfied})
	}
	return nil
}

// OutsideView returns the self-facts in asked that c's reflexive aperture
// does not make visible, sorted. The kernel's self-view uses it so that a
// self-query and a proposal's self-queries are judged by one rule.
func OutsideView(c *Contract, asked []string) []string {
	var d Decision
	return append([]string(nil), d.outside(asked, c.VisibleFacts)...)
}

func checkFacts(f *Facts) error {
	if !f.Amount.IsZero() {
		if err := checkMoney(f.Amount); err != nil {
			return fmt.Errorf("%w: amount: %w", ErrInvalidFacts, err)
		}
		if f.Amount.Minor <= 0 {
			return fmt.Errorf("%w: amount: must be positive, got %d minor units", ErrInvalidFacts, f.Amount.Minor)
		}
	}
	if !f.PriorAmount.IsZero() {
		if err := checkMoney(f.PriorAmount); err != nil {
			return fmt.Errorf("%w: prior_amount: %w", ErrInvalidFacts, err)
		}
		if f.PriorAmount.Minor < 0 {
			return fmt.Errorf("%w: prior_amount: must not be negative", ErrInvalidFacts)
		}
		if f.Amount.IsZero() || f.PriorAmount.Currency != f.Amount.Currency {
			return fmt.Errorf("%w: prior_amount: currency %q differs from the amount's", ErrInvalidFacts, f.PriorAmount.Currency)
		}
	}
	if f.ActionCount < 0 {
		return fmt.Errorf("%w: action_count: must not be negative", ErrInvalidFacts)
	}
	for i := range f.Evidence {
		if f.Evidence[i].AgeSeconds < 0 {
			return fmt.Errorf("%w: evidence[%d].age_seconds: must not be negative", ErrInvalidFacts, i)
		}
		if f.Evidence[i].Provenance > InstructionBearing {
			return fmt.Errorf("%w: evidence[%d].provenance: unknown class %d", ErrInvalidFacts, i, f.Evidence[i].Provenance)
		}
	}
	return nil
}

// checkMoney checks the shape of a currency code: three upper-case letters.
func checkMoney(m Money) error {
	if len(m.Currency) != 3 {
		return fmt.Errorf("currency code %q is not ISO 4217", m.Currency)
	}
	for i := 0; i < 3; i++ {
		if m.Currency[i] < 'A' || m.Currency[i] > 'Z' {
			return fmt.Errorf("currency code %q is not ISO 4217", m.Currency)
		}
	}
	return nil
}

func stateChanged(f *Facts, c *Contract) bool {
	if f.StateVersion == "" {
		return false // unknown, reported as missing evidence
	}
	if c.StateVersion != "*" {
		if f.StateVersion != c.StateVersion {
			return true
		}
		if f.CurrentStateVersion != "" && f.CurrentStateVersion != c.StateVersion {
			return true
		}
	}
	// Rule 3: evidence read before the record last changed is stale even
	// where the contract binds no particular version.
	return c.Coupling.RevokeOnStateChange && f.CurrentStateVersion != "" && f.CurrentStateVersion != f.StateVersion
}

func exceedsCumulative(f *Facts, c *Contract) bool {
	if c.MaxCumulative.IsZero() || f.Amount.IsZero() || f.Amount.Currency != c.MaxCumulative.Currency {
		return false
	}
	// amount > max - prior, written so that it cannot overflow.
	return f.PriorAmount.Minor > c.MaxCumulative.Minor || f.Amount.Minor > c.MaxCumulative.Minor-f.PriorAmount.Minor
}

func citesRecord(ev []Evidence, record string) bool {
	for i := range ev {
		if ev[i].Record == record && !ev[i].Quarantined {
			return true
		}
	}
	return false
}

func toolIndex(tools []Tool, name string) int {
	for i := range tools {
		if tools[i].Name == name {
			return i
		}
	}
	return -1
}

// destinationGranted reports whether the granted tool at i allows dest; for
// a tool outside the grant, whether any granted tool does (the seed's
// destinations are one list for every action type).
func destinationGranted(tools []Tool, i int, dest string) bool {
	if i >= 0 {
		return slices.Contains(tools[i].Destinations, dest)
	}
	for j := range tools {
		if slices.Contains(tools[j].Destinations, dest) {
			return true
		}
	}
	return false
}

func oldest(ev []Evidence) int64 {
	var age int64
	for i := range ev {
		age = max(age, ev[i].AgeSeconds)
	}
	return age
}

// provenanceOf is the stricter of the evidence's own class and the one the
// contract gives its source; an ungranted source counts as instruction
// bearing.
func provenanceOf(e *Evidence, sources []Source) Provenance {
	granted := InstructionBearing
	for i := range sources {
		if sources[i].Name == e.Source {
			granted = sources[i].Provenance
			break
		}
	}
	return max(granted, e.Provenance)
}

func hasTrusted(ev []Evidence, sources []Source) bool {
	for i := range ev {
		if !ev[i].Quarantined && provenanceOf(&ev[i], sources) == Trusted {
			return true
		}
	}
	return false
}

// smallSet is the size up to which a linear scan is used: it beats
// building a set and allocates nothing. Longer lists go through maps, so an
// evaluation stays linear in its input however long the lists are.
const smallSet = 16

// set answers membership in a list.
type set struct {
	list []string
	m    map[string]struct{}
}

func newSet(list []string) set {
	if len(list) <= smallSet {
		return set{list: list}
	}
	m := make(map[string]struct{}, len(list))
	for _, s := range list {
		m[s] = struct{}{}
	}
	return set{m: m}
}

func (s set) has(x string) bool {
	if s.m != nil {
		_, ok := s.m[x]
		return ok
	}
	return slices.Contains(s.list, x)
}

// collector gathers distinct items into d's item buffer.
type collector struct {
	d     *Decision
	start int
	seen  map[string]struct{}
}

func (d *Decision) collect() collector { return collector{d: d, start: len(d.items)} }

func (c *collector) add(x string) {
	got := c.d.items[c.start:]
	if c.seen == nil {
		if slices.Contains(got, x) {
			return
		}
		if len(got) == smallSet {
			c.seen = make(map[string]struct{}, 2*smallSet)
			for _, g := range got {
				c.seen[g] = struct{}{}
			}
		}
	}
	if c.seen != nil {
		if _, dup := c.seen[x]; dup {
			return
		}
		c.seen[x] = struct{}{}
	}
	c.d.items = append(c.d.items, x)
}

func (c *collector) sorted() []string { return sortStrings(c.d.items[c.start:]) }

// outside returns the members of asked missing from grant, deduplicated and
// sorted, in d's item buffer.
func (d *Decision) outside(asked, grant []string) []string {
	g, c := newSet(grant), d.collect()
	for _, s := range asked {
		if !g.has(s) {
			c.add(s)
		}
	}
	return c.sorted()
}

func (d *Decision) sorted(in []string) []string {
	return d.outside(in, nil)
}

// fieldsOutside lists the fields read outside their source's grant (the
// contract's fields for a source that narrows none).
func (d *Decision) fieldsOutside(ev []Evidence, c *Contract) []string {
	global, col := newSet(c.Fields), d.collect()
	narrows := false // no source narrows its fields: the seed's form
	for j := range c.Sources {
		narrows = narrows || c.Sources[j].Fields != nil
	}
	for i := range ev {
		grant := global
		for j := 0; narrows && j < len(c.Sources); j++ {
			if c.Sources[j].Name == ev[i].Source && c.Sources[j].Fields != nil {
				grant = newSet(c.Sources[j].Fields)
				break
			}
		}
		for _, s := range ev[i].Fields {
			if !grant.has(s) {
				col.add(s)
			}
		}
	}
	return col.sorted()
}

func (d *Decision) sourcesOutside(ev []Evidence, grant []Source) []string {
	c := d.collect()
	for i := range ev {
		granted := false
		for j := range grant {
			if grant[j].Name == ev[i].Source {
				granted = true
				break
			}
		}
		if !granted {
			c.add(ev[i].Source)
		}
	}
	return c.sorted()
}

// sortStrings sorts in place without allocating: insertion sort for a
// handful, pdqsort beyond.
func sortStrings(s []string) []string {
	if len(s) > smallSet {
		slices.Sort(s)
		return s
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}
