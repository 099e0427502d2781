// Package action is the action adapter: it serves
// ambit.action.v1.ActionService/Execute, performing exactly the call a
// kernel capability binds through the executor declared for its tool,
// at most once per idempotency key, and answering every retry with the
// first effect's signed receipt.
//
// Executors are configuration ([Config], [ExecutorConfig]): an sql
// executor inserts one row into a table whose key column is UNIQUE, its
// columns mapped by CEL over args, call and effect; an http executor POSTs
// JSON with an Idempotency-Key header; an mcp executor calls a tool of an
// upstream MCP server with mapped arguments. [OpenExecutors] checks each
// against its target at start-up.
//
// An execution ([Core.Execute]) runs in this order:
//
//  1. The handler checks the request's shape ([ValidateExecute]).
//  2. The capability must verify against the kernel's key
//     (PermissionDenied CAPABILITY_INVALID), be presented by its holder
//     (CAPABILITY_NOT_HOLDER) with its own idempotency key
//     (InvalidArgument IDEMPOTENCY_KEY_MISMATCH), and its tool must have an
//     executor (Unimplemented NO_EXECUTOR).
//  3. The key table ([Keys], the adapter's own database) is read. A key
//     used under another capability or for another call is InvalidArgument
//     IDEMPOTENCY_KEY_REUSED and nothing else happens.
//  4. A first attempt evaluates the executor's mappings (InvalidArgument
//     ARGUMENTS_INVALID when the call does not fit), then, when a state
//     check is configured for the source of the capability's record
//     ([StateCheckConfig]: a table read read-only, or a read-only tool of
//     the source's MCP server), needs the record still at the
//     capability's state version (FailedPrecondition STATE_VERSION_CHANGED,
//     [StateChangedError]; Unavailable DEPENDENCY_UNAVAILABLE when it
//     cannot be read). Nothing is redeemed or executed before these pass;
//     expiry is the kernel's to judge.
//  5. The kernel redeems the capability (AdapterService/RedeemCapability,
//     with the holder), on every call including retries. A kernel that
//     cannot be reached is Unavailable KERNEL_UNAVAILABLE "kernel
//     unreachable: nothing was executed"; its refusals pass through
//     unchanged ([upstream.Refusal]). Expiry is the kernel's to judge:
//     it refuses a capability it never redeemed once it has expired
//     (FailedPrecondition CAPABILITY_EXPIRED), and answers a retry of one
//     it redeemed in time whatever the time, because an attempt without a
//     key row may follow a redemption (an attempt that died before its
//     key was written, or whose target certainly did nothing).
//  6. A first attempt writes its key Started, performs the effect, signs
//     the effect receipt (the capability's call and destination, the
//     target's record_ref, executed_at) and writes the key Done with it.
//     An sql executor whose database is the adapter's own writes the
//     effect's row and the Done key in one transaction instead. A target
//     that refused the effect and certainly holds nothing of it (a
//     constraint of an sql table; an http 4xx but 408, 409, 425 and 429)
//     settles the key Done with a signed refusal receipt, which the
//     kernel logs (AdapterService/RecordRefusal) and closes the
//     commitment as REFUSED, no longer counting against the task:
//     FailedPrecondition TARGET_REFUSED answers it, and every retry (an
//     attempt of another process whose effect happened meanwhile is
//     EFFECT_IN_DOUBT, logged as an error, for the readback). Any
//     other failure that certainly left nothing at the target removes the
//     Started key; Unavailable DEPENDENCY_UNAVAILABLE or FailedPrecondition
//     TARGET_REFUSED answer it.
//  7. A retry of a Done key returns its receipt (repeated). A retry of a
//     Started key (a crash or failure between the effect and its receipt)
//     is settled by the target ([Effect.Resolve]): an sql table's row for
//     the key decides, an http request is sent again with the same
//     Idempotency-Key, an mcp tool that takes the key is called again,
//     and any other mcp tool is not called: FailedPrecondition
//     EFFECT_IN_DOUBT, logged, and the verifier's readback decides.
//  8. Failpoints (crash tests only): the process frame's environment
//     variable AMBIT_FAILPOINT ([FailpointEnv]) arms points at which the
//     process sends itself SIGKILL: "action.after-start"
//     ([FailpointAfterStart]) right after a key is written Started,
//     "action.after-commit" ([FailpointAfterCommit]) right after an effect
//     commits at its target, before anything else, and the frame's own at
//     the edges of its calls (e.g. "answer:RedeemCapability"). Unset,
//     nothing is armed.
//  9. The kernel logs the effect receipt (AdapterService/RecordEffect,
//     idempotent). Until it has, no receipt is returned: the answer is
//     Unavailable EFFECT_NOT_RECORDED, and a retry returns the first
//     receipt.
//
// A background sweep ([Core.RunSweep], started by [Run] and stopped with
// it) re-sends receipts the kernel has not logged, so an effect is logged
// even if the agent never retries. The same loop notes in the key table,
// in batches after the answers, which receipts the kernel has logged: a
// note lost to a crash only means one more (idempotent) send.
//
// One log line is written per effect: capability, task, tool, executor,
// idempotency key, receipt id, record_ref and the repeated flag; never the
// call's arguments.
//
// [Run] is the ambit-action program; [Config] its configuration, [Policy]
// its role policy (Execute: agent), [Handler] the gRPC handler.
package action
