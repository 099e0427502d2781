// Package cli implements the ambitctl command: offline suites and single
// evaluations, the seed's method (reach, the removal test, contraction
// debt and the evaluation report), dev certificates, governance actions
// against a running kernel, and authority-ledger checks.
//
// [Main] dispatches on the first argument; every command writes its result
// to the given stdout and returns an error rather than exiting, so that
// commands are testable in process.
package cli
