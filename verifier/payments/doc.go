// Package payments is the verifier's own read-only path to the payments
// ledger the action adapter writes. It shares no code with the writer: the
// file is opened with mode=ro and every connection is query_only, so the
// verifier cannot change the system of record it checks, even through a
// bug. [Open] returns a [Reader]; [Reader.Read] returns, in one snapshot,
// the rows for an idempotency key and the rows for a claim.
package payments
