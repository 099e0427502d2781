// Package debt computes the contraction debt of a widening (seed 002:
// "the unmeasured growth in reachable trajectories caused by widening one
// aperture without recomputing the coupled contract"): the routes the
// newer contract adds or widens and the limits it relaxes (package
// reach), the failure families newly reachable, the episodes to re-run
// with their results under both contracts, and the change in review load.
//
// [Compute] pays the path analysis and the failure injection; [Record]
// turns the result into the ledger's debt record
// (ambit.ledger.v1.DebtRecord), to which an approver adds the assurance
// decision by promoting it. [Text] renders the debt for people.
package debt
