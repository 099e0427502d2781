// Package journal is the kernel's tamper-evident log: an append-only
// sequence of entries, each carrying the hash of the one before.
//
// Every decision, capability, evidence record, effect, readback and
// authority-ledger transition is appended with [Append] inside the same
// database transaction as the state change it records, so there is no
// state change without its entry. [Verify] recomputes the chain and names
// the first entry that was edited, removed, inserted or moved.
package journal
