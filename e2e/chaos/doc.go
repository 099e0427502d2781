// Package chaos is the crash test of a whole stack: agents run full loops
// (bind a task, read, propose, execute, read back) of the expense refund
// and the support desk on many tasks while a monkey kills the kernel, the
// evidence adapter, the action adapter and the verifier with SIGKILL, at
// random times and at every failpoint the code has, and restarts them.
// The agents retry as a real agent would: the same request id, the same
// capability and idempotency key. Then an audit checks that what
// happened is exactly what was intended.
//
// [Run] drives a running devstack.Stack and returns a [Report]: the
// figures of the run ([Figures]: loops, kills per process and failpoint,
// retries per step) and of the audit ([Audit]: effects in the targets and
// receipts in the kernel's journal, duplicates, effects without receipts
// and receipts without effects, open commitments, receipts whose
// signature does not verify). [VerifyLedger] runs `ambitctl ledger
// verify` on the stopped kernel's journal and checkpoints; [Report.Write]
// prints everything as a table and [Report.Problems] lists every figure
// that is not what it must be.
//
// [Failpoints] lists the points the monkey arms per process, through the
// process frame's AMBIT_FAILPOINT (package service).
package chaos
