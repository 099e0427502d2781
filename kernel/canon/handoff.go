package canon

import (
	"fmt"
	"slices"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
)

// Intersect returns the contract a child receives through filter f: a new
// contract (parent is never modified) that grants only what both parent and
// f grant, so a handoff can only shrink reach.
//
//   - Evidence fields and sources, action types and destinations, and
//     visible self-facts are the parent's lists kept in the parent's order,
//     without duplicates, restricted to names f lists. An empty list in f
//     forwards nothing of that kind: a declared filter is an allow-list.
//   - Mutable self-facts are always empty: f has no way to declare them, so
//     a handoff never forwards the right to change the boundary.
//   - max_amount is the lower of the parent's and f's (f's unset keeps the
//     parent's; the currencies must match; a parent without one keeps none,
//     since that grants no amount). approval_over is lowered to the
//     new max_amount if it was above it, so the child stays well formed.
//   - max_actions is the lower of the parent's and f's; 0 in f keeps the
//     parent's.
//   - Everything else (binding, evidence age, cumulative limit,
//     irreversibility, coupling) is copied.
//
// A nil f is not an error: it returns a copy of parent, which is what an
// unfiltered handoff would forward. Recording such a child is the caller's
// job, and the ledger classifies it HOLD (see DeriveHandoff), so it is never
// enforced.
func Intersect(parent *contractv1.Contract, f *ledgerv1.HandoffFilter) (*contractv1.Contract, error) {
	if parent == nil {
		return nil, fmt.Errorf("intersect: no parent contract: %w", ErrInvalidItem)
	}
	child := proto.CloneOf(parent)
	if f == nil {
		return child, nil
	}
	// A malformed filter is refused whatever the parent, so that the same
	// filter is valid or invalid for every parent.
	if m := f.GetMaxAmount(); m != nil && (m.GetCurrencyCode() == "" || m.GetMinorUnits() < 0) {
		return nil, fmt.Errorf("intersect: filter max_amount needs a currency and a non-negative amount: %w", ErrInvalidFilter)
	}
	if f.GetMaxActions() < 0 {
		return nil, fmt.Errorf("intersect: filter max_actions %d is negative: %w", f.GetMaxActions(), ErrInvalidFilter)
	}
	if e := child.GetEvidence(); e != nil {
		e.Fields = keep(e.GetFields(), f.GetFields())
		var sources []*contractv1.SourceGrant
		seen := map[string]bool{}
		for _, s := range e.GetSources() {
			if !slices.Contains(f.GetSources(), s.GetName()) || seen[s.GetName()] {
				continue
			}
			seen[s.GetName()] = true
			narrowed := len(s.GetFields())+len(s.GetDerived())+len(s.GetQuarantined()) > 0
			s.Fields = keep(s.GetFields(), f.GetFields())
			s.Quarantined = keep(s.GetQuarantined(), f.GetFields())
			s.Derived = slices.DeleteFunc(s.Derived, func(d *contractv1.DerivedField) bool { return !slices.Contains(f.GetFields(), d.GetName()) })
			if narrowed && len(s.GetFields())+len(s.GetDerived())+len(s.GetQuarantined()) == 0 {
				// Nothing left to release: an empty grant would fall back
				// to the aperture's fields and widen the source.
				continue
			}
			sources = append(sources, s)
		}
		e.Sources = sources
	}
	if a := child.GetAction(); a != nil {
		var tools []*contractv1.ToolGrant
		for _, t := range a.GetTools() {
			if !slices.Contains(f.GetTools(), t.GetName()) || slices.ContainsFunc(tools, func(k *contractv1.ToolGrant) bool { return k.GetName() == t.GetName() }) {
				continue
			}
			t.Destinations = slices.DeleteFunc(t.Destinations, func(d *contractv1.DestinationClass) bool { return !slices.Contains(f.GetDestinations(), d.GetName()) })
			if len(t.GetDestinations()) == 0 {
				continue // no destination left: the tool could reach nothing
			}
			tools = append(tools, t)
		}
		a.Tools = tools
		limit, err := lowerLimit(a.GetMaxAmount(), f.GetMaxAmount())
		if err != nil {
			return nil, fmt.Errorf("intersect max_amount: %w", err)
		}
		a.MaxAmount = limit
		if ao := a.GetApprovalOver(); ao != nil && limit != nil &&
			ao.GetCurrencyCode() == limit.GetCurrencyCode() && ao.GetMinorUnits() > limit.GetMinorUnits() {
			a.ApprovalOver = proto.CloneOf(limit)
		}
		if m := f.GetMaxActions(); m > 0 && m < a.GetMaxActions() {
			a.MaxActions = m
		}
	}
	if r := child.GetReflexive(); r != nil {
		r.VisibleFacts = keep(r.GetVisibleFacts(), f.GetVisibleFacts())
		r.MutableFacts = nil
	}
	return child, nil
}

// keep returns the names of parent that allowed lists, in parent's order and
// without duplicates. The result is nil when nothing is kept.
func keep(parent, allowed []string) []string {
	var out []string
	for _, n := range parent {
		if slices.Contains(allowed, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// lowerLimit returns the lower of two limits. A nil filter limit keeps the
// parent's. A nil parent limit stays nil: the filter cannot introduce a
// limit the parent lacks, because a contract without max_amount grants no
// amount at all and any value would widen it.
func lowerLimit(parent, filter *contractv1.Money) (*contractv1.Money, error) {
	switch {
	case filter == nil || parent == nil:
		return proto.CloneOf(parent), nil
	case parent.GetCurrencyCode() != filter.GetCurrencyCode():
		return nil, fmt.Errorf("filter limit in %q, parent limit in %q: %w", filter.GetCurrencyCode(), parent.GetCurrencyCode(), ErrInvalidFilter)
	case filter.GetMinorUnits() < parent.GetMinorUnits():
		return proto.CloneOf(filter), nil
	}
	return proto.CloneOf(parent), nil
}
