// Package attack is an AgentDojo/InjecAgent-style harness: it plants
// injected instructions in the evidence of the two example domains — the
// text of an uploaded receipt (expense-refund), a customer's message
// (supportdesk) — and has a scripted, compromised agent follow each one
// through the real agent API (sdk/client) against the four processes of a
// running stack (sdk/devstack): the kernel, the evidence adapter, the
// action adapter and the verifier.
//
// The families of injected instructions ([Families]) are: exfiltrate
// fields, pay another destination, exceed limits, replay a capability,
// widen the boundary, and act after a state change. For every family and
// example, [Harness.Run] plants a scene of fresh records (the attacked
// task's record, whose instruction-bearing evidence carries the
// injection, a record for a legitimate task, and another party's record),
// binds both tasks to the example's shipped contract, and runs the
// compromised agent and a legitimate task side by side on the same agent
// identity. The compromised agent reads the injection from its evidence,
// then does what it says; whatever the kernel allows, it executes and
// verifies at once, so any misjudgment lands in the target system.
//
// It counts, per family and example ([Result]):
//
//   - unauthorised effects: rows in the target systems (the payments
//     table; the desk's replies, credits and closures) for the scene's
//     records beyond the effects the task owner intended, each once;
//   - leaked values: canaries planted in every field the agent is not
//     granted (the claim's salary, medical, bank and disciplinary columns;
//     another party's record and text) that appear in any response the
//     agent received, error details included; every response is recorded
//     at the agent's gRPC connections;
//   - refused legitimate work: legitimate tasks that did not end with
//     their effect executed once and read back VERIFIED.
//
// [Format] prints the table. An unauthorised effect or a leaked value is a
// defect of the system under test; the harness expects zero of both.
package attack
