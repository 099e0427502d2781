// Package logfile is an append-only file of records, written in batches:
// concurrent appends share one write(2), and at the durable setting one
// fdatasync, and each returns only once its batch is written (and synced).
// While a batch is written the next one gathers, so a busy file writes
// once per batch, not once per record.
//
// An SQLite store at durability normal acknowledges a decision's commit
// from one (package store), and copies it into SQLite after.
// `BenchmarkDecisionCommit` in package store times an append beside
// SQLite's commit of the same rows.
//
// A batch is framed by a header that carries its first record's number,
// its record count, its length and a CRC-32C of all of it, so that
// reopening a file finds where whole batches end. A batch that does not
// check out at the end of the file is a write the process or the machine
// did not finish: it was never acknowledged, and [Open] truncates it. A
// batch that does not check out with whole batches after it is damage, and
// [Open] refuses the file rather than drop records it acknowledged.
package logfile
