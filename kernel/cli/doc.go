// Package cli implements the ambitctl command: offline suites and single
// evaluations, the seed's method (reach, the removal test, contraction
// debt and the evaluation report), dev certificates, governance actions
// against a running kernel, and authority-ledger checks.
//
// [Main] runs the command line through a tree of cobra commands, one
// function per command declaring its flags; every command writes its
// result to the given stdout and returns an error rather than exiting, so
// that commands are testable in process. [ErrUsage] marks a command line
// that could not be understood, [ErrFailed] a check that ran and failed.
// Shell completion comes from the same tree (ambitctl completion bash).
package cli
