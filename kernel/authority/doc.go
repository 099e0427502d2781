// Package authority is the kernel's core: it decides proposals, issues and
// redeems one-time capabilities, records evidence, effects and readbacks,
// keeps commitments, and runs the authority ledger — everything the gRPC
// handlers of package server call, and nothing that knows about gRPC.
//
// [Kernel.Submit] derives the evidence facts from signed, recorded evidence
// receipts (never from what the agent says it read), evaluates them with
// the pure evaluator under the task's contract and its ledger class, and
// appends the signed decision receipt to the journal before answering. The
// adapter-facing methods ([Kernel.AuthorizeRead], [Kernel.RecordEvidence],
// [Kernel.Redeem], [Kernel.RecordEffect], [Kernel.RecordReadback]) and the
// governance methods change state only together with a journal entry.
//
// On an exclusive store (the embedded SQLite database) a decision is made
// on the caller's goroutine, beside the others: it stamps what other
// updates may change (the task's binding, its records' versions, the
// ledger), reads through the store's memory, reserves its share of the
// task's grant, evaluates, signs and marshals; the store's one writer then
// only checks the stamps and appends. An outcome that would differ were the
// other decisions in flight on the task granted is made again with the task
// alone, so every answer is one a serial order gives. On a database other
// replicas write, the decision is made inside the writer.
//
// Refusals are [*Refusal] values whose Kind says what kind of refusal it is
// (invalid input, outside the grant, stale state, unknown); the server maps
// them to gRPC codes in one place.
package authority
