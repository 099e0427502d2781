// Package reach computes a contract's route inventory and excess-reach
// estimate Ω(C) (seed 002: "identify how many bad choices the system can
// actually realise and which component grants each route"), and the
// difference between two contracts that a widening's contraction debt is
// made of.
//
// # Routes
//
// [Of] compiles a contract and lists every route by which something can
// enter the agent's context, become an effect, or reach its self-view:
//
//   - E, one per (source, field) a source releases, raw, derived or
//     quarantined, with the source's provenance. Granted by the evidence
//     adapter, which releases the field on the kernel's read grant.
//   - A, one per (tool, destination class) that can be executed, with the
//     amount bound, approval threshold, cumulative cap, action count and
//     irreversibility. Granted by the action adapter, which performs the
//     effect on the kernel's one-time capability. An irreversible tool
//     under a contract that allows no irreversible effect, and every tool
//     under max_actions 0, has no route.
//   - R, one per self-fact the agent may read ("read F") and, unless
//     coupling rule 4 forbids every self-mutation, one per self-fact it may
//     change ("change F"). Granted by the kernel, which answers the
//     self-view and holds the boundary.
//
// # Failure families
//
// Each route carries the failure families of the seed under which it can
// carry a bad choice, derived from the contract alone:
//
//	family             route  carried when
//	provenance         E      the source is UNTRUSTED or INSTRUCTION_BEARING, the field is not
//	                          quarantined, and coupling rule 1 (trusted corroboration) is off
//	provenance         A      rule 1 is off and some source of that kind releases a field that
//	                          is not quarantined: untrusted content alone can authorise the effect
//	field scope        E      the field is raw and reads of its source are not confined to the
//	                          task's record (binding.record, or the source's record_field), or
//	                          the binding's subject or purpose is "*"
//	state freshness    A      binding.state_version is "*" and coupling rule 3 is off
//	destination        A      the destination class's condition is constant true
//	cumulative amount  A      the tool moves money, no max_cumulative_amount is set and
//	                          max_actions is above 1 (one action is capped by max_amount)
//	irreversibility    A      the tool is irreversible and coupling rule 2 lacks either the
//	                          fresh-evidence limit or the approval (the extended corpus's family)
//	self-query         R      a read of policy_thresholds, credentials or contract
//	contract mutation  R      every change route (it exists only while rule 4 is off)
//
// # Ω(C)
//
// Ω(C) = (number of routes) + (number of (route, failure family) pairs).
// Every route counts once, because a relation granted without a
// demonstrated task dependency is excess reach whatever it carries, and
// once more for each family under which it can carry a bad choice. Two
// contracts compare by it; it is an estimate of reachable trajectories, not
// a probability of harm.
//
// # Widening
//
// [Compare] lists what a newer contract adds to an older one: new routes,
// routes that reach further (new families, a less trusted provenance, a
// rawer form, an irreversible tool, a changed condition, constraint or
// schema) and relaxed contract-wide limits (binding, expiry, evidence age,
// amounts, counts, irreversibility, coupling switches). [Diff.Widens]
// reports whether there is anything to repay; [Diff.RerunFamilies] names
// the failure families whose episodes must be re-run.
package reach
