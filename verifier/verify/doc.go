// Package verify is the readback verifier: it serves
// ambit.verifier.v1.VerifierService/Verify, checking the system of record
// through its own read-only path against a capability and its effect
// receipt, and signing a readback receipt the kernel needs to close the
// commitment.
//
// A verification ([Core.Verify]):
//
//  1. The handler checks that both envelopes are present ([ValidateVerify]).
//  2. The capability must verify against the kernel's key and the effect
//     receipt against the action adapter's key (PermissionDenied
//     otherwise). A receipt that verifies but disagrees with the
//     capability is a MISMATCH finding, not an error.
//  3. The payments ledger is read read-only (package payments): every
//     payment under the capability's idempotency key and every payment for
//     its claim, in one snapshot. An unreadable ledger is Unavailable and
//     nothing is concluded.
//  4. [readback.Check] decides VERIFIED or MISMATCH with every finding.
//  5. A ReadbackReceipt is signed (key id = identity) and logged at the
//     kernel (AdapterService/RecordReadback); it is returned only once
//     logged. A kernel that cannot be reached is Unavailable; its refusals
//     pass through unchanged ([upstream.Refusal]).
//
// One JSON log line is written per verification.
//
// [Run] is the ambit-verifier program; [Config] its configuration,
// [Policy] its role policy (Verify: agent and governance), [Handler] the
// gRPC handler.
package verify
