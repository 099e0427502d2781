// Package payments is the demo's system of record for refunds: a SQLite
// payments ledger whose only writer is the action adapter.
//
// Each row is one executed refund, keyed by payment id, with a UNIQUE
// idempotency key: at most one payment per key can ever be committed, even
// when two retries race. The row also stores the executed action and the
// signed effect receipt (so a retry returns the first receipt byte for
// byte) and whether the kernel has logged that receipt yet.
//
// Entry points:
//
//   - [Open] opens the ledger (WAL, synchronous FULL, busy timeout) and
//     creates its table.
//   - [Ledger.Insert] commits one [Payment] in one transaction; a second
//     payment for the same key is [ErrDuplicate].
//   - [Ledger.ByKey] looks a payment up by idempotency key ([ErrNotFound]).
//   - [Ledger.MarkRecorded] and [Ledger.Unrecorded] track which effect
//     receipts the kernel has logged.
//
// The verifier reads the same file through its own read-only path; it does
// not use this package.
package payments
