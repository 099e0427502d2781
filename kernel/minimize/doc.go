// Package minimize runs the seed's removal test: "Start from a working
// contract. Remove one field, source, action parameter or self-fact.
// Re-run legitimate tasks and failure injections. If success and
// obligations do not change, the removed relation was excess reach."
//
// [Run] lists every element of a contract ([Elements]): each tool,
// destination class, source, field, visible and mutable self-fact, each
// limit it can tighten to what the legitimate episodes demonstrate (the
// binding's "*", the amount bound and approval threshold, the action
// count, the cumulative cap, the evidence age, irreversibility) and each
// coupling rule it can switch on. For each element alone it removes or
// tightens it, re-runs the episodes and reports the legitimate episodes
// whose outcome gets worse (the element's demonstrated task dependency)
// and the unsafe episodes it lets through that are refused without it.
// A declared constraint is only tested: removing one never narrows, so
// the report names the unsafe episodes it prevents and keeps it.
//
// The minimal contract is then built greedily, in the order of
// [Elements]: an element is removed or tightened when, with everything
// removed before it, every legitimate episode still ends at least as well
// as under the original contract. Outcomes are ranked ALLOW, REVIEW that
// an approval settles, other REVIEW, DENY; for an episode marked
// approval_required an approvable REVIEW ranks with ALLOW, because the
// review is its policy's obligation, not a cost. Every step only narrows,
// so the result admits no unsafe episode the original refused, and no
// element can be removed from it without a legitimate episode getting
// worse: it is minimal, though another order could find a different
// minimal contract.
//
// The removal test cannot judge the binding's expiry (episodes are
// evaluated at one instant) or a contract's record binding; those are
// kept as they are, and the report says so.
package minimize
