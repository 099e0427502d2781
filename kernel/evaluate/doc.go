// Package evaluate is Ambit's decision core: a pure, deterministic function
// from facts, a compiled contract and a clock reading to ALLOW, REVIEW or
// DENY with every reason.
//
// [Evaluate] performs no I/O, reads no clock and keeps no state. It
// reproduces the reference evaluator of the contraction seed check for check
// (binding, then the epistemic, executive and reflexive apertures; deny
// reasons first, then review reasons) and adds the four coupling rules of
// [Coupling]: provenance, irreversibility, state continuity and boundary
// change.
//
// A [Decision] is reused across calls so that evaluating allocates nothing
// once its buffers have grown; [Reason.Detail] renders the human text on
// demand.
package evaluate
