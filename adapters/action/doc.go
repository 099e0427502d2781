// Package action is the action adapter: it serves
// ambit.action.v1.ActionService/Execute, paying refunds into the payments
// ledger (package payments) only with a kernel capability that binds
// exactly the requested effect, redeemed once, and answering every retry
// with the first effect's signed receipt.
//
// An execution ([Core.Execute]) runs in this order:
//
//  1. The handler checks the request's shape ([ValidateExecute]); action
//     types other than refund are Unimplemented.
//  2. The capability must verify against the kernel's key
//     (PermissionDenied "capability does not verify"), and the request's
//     idempotency key must be the capability's.
//  3. The ledger is looked up by idempotency key. A payment for a different
//     effect under the key is InvalidArgument "idempotency key already used
//     for a different effect" and nothing else happens.
//  4. The requested action must equal the capability's (PermissionDenied);
//     a first execution also needs an unexpired capability
//     (FailedPrecondition "capability expired") and, when a claims
//     database is configured (claims_database, opened read-only), a claim
//     still at the capability's state version: the refund's claim row is
//     read before anything is redeemed, and a change since the decision is
//     FailedPrecondition "claim C-1004 changed since the decision
//     (claims-v42 → claims-v43): nothing was executed" ([StateChangedError];
//     a claim that is gone too). A capability without a state version is
//     not checked, nor is a retry of a payment that exists.
//  5. The kernel redeems the capability (AdapterService/RedeemCapability),
//     on every call including retries. A kernel that cannot be reached is
//     Unavailable "kernel unreachable: nothing was executed"; its refusals
//     pass through unchanged ([upstream.Refusal]).
//  6. A first execution signs the effect receipt and inserts the payment
//     with it in one transaction. The ledger's UNIQUE idempotency key keeps
//     racing retries to one payment; the loser continues as a retry.
//  7. Failpoint (crash tests only): when the environment variable
//     AMBIT_FAILPOINT ([FailpointEnv]) is "action.after-commit"
//     ([FailpointAfterCommit]), the process sends itself SIGKILL right
//     after the payment transaction commits, before anything else. Unset or
//     any other value, it has no effect. See [AfterCommitHook].
//  8. The kernel logs the effect receipt (AdapterService/RecordEffect,
//     idempotent). Until it has, no receipt is returned: the answer is
//     Unavailable "effect committed but not yet recorded; retry with the
//     same idempotency key", and a retry returns the first receipt.
//  9. The response carries the receipt, its signed envelope and repeated
//     (true when the payment existed before this call).
//
// A background sweep ([Core.RunSweep], started by [Run] and stopped with
// it) re-sends receipts the kernel has not logged, so an effect is logged
// even if the agent never retries.
//
// One JSON log line is written per effect: capability id, idempotency key,
// payment id, amount in minor units and currency, and the repeated flag.
//
// [Run] is the ambit-action program; [Config] its configuration, [Policy]
// its role policy (Execute: agent), [Handler] the gRPC handler.
package action
