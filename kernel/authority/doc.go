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
// Refusals are [*Refusal] values whose Kind says what kind of refusal it is
// (invalid input, outside the grant, stale state, unknown); the server maps
// them to gRPC codes in one place.
package authority
