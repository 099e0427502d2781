// Package verify is the readback verifier: it serves
// ambit.verifier.v1.VerifierService/Verify, reading the system of record
// through the tool's declared readback — its own read-only path — against
// a capability and its effect receipt, and signing a readback receipt the
// kernel needs to close the commitment.
//
// A verification ([Core.Verify]):
//
//  1. The handler checks that both envelopes are present ([ValidateVerify]).
//  2. The capability must verify against the kernel's key
//     (PermissionDenied otherwise) and the effect receipt against the
//     action adapter's key (InvalidArgument). The effect receipt must report
//     the capability's effect: same capability, task, idempotency key,
//     destination and call (InvalidArgument RECEIPT_MISMATCH otherwise,
//     listing every difference).
//  3. The tool's readback (package readback) reads the system of record
//     for the capability's call: a tool without one is Unimplemented, a
//     call its argument mappings do not evaluate over is InvalidArgument,
//     and a source that cannot be read is Unavailable; in each case nothing
//     is concluded and nothing is signed.
//  4. Every declared check is evaluated over the rows read, the call's
//     canonical arguments, the call and the effect: VERIFIED when every
//     check holds, MISMATCH otherwise with every finding (a failed check's
//     code; code:unevaluable for a check that cannot be evaluated);
//     records_found is the number of rows read.
//  5. A ReadbackReceipt is signed (key id = identity) and logged at the
//     kernel (AdapterService/RecordReadback); it is returned only once
//     logged. A kernel that cannot be reached is Unavailable; its refusals
//     pass through unchanged ([upstream.Refusal]).
//
// Every refusal carries an ErrorInfo with its declared ErrorReason
// (statuses, the one table). One JSON log line is written per
// verification; it names findings, never values read.
//
// [Run] is the ambit-verifier program; [Config] its configuration (the
// declared readbacks under [ReadbacksKey]), [Policy] its role policy
// (Verify: agent and governance), [Handler] the gRPC handler.
package verify
