// Package journal is the kernel's verifiable log: an append-only sequence
// of entries that are the leaves of one Merkle tree with RFC 6962 hashing,
// as in Certificate Transparency.
//
// Every decision, capability, evidence record, effect, readback and
// authority-ledger transition is appended with [Append] inside the same
// database transaction as the state change it records, so there is no
// state change without its entry. A leaf is the [LeafData] of the whole
// entry (position, time, kind, ref, body). Each entry row also stores the
// hashes of the perfect subtrees it completes. A writer keeps the tree's
// [Frontier] (its compact range) in memory, so [Insert] costs one row
// write and no read at any size, and [InclusionProof], [ConsistencyProof]
// and [RootAt] read O(log n) rows.
//
// [Verify] streams the log once with bounded memory, recomputes the tree,
// compares it with the stored hashes and with trusted tree heads (signed
// checkpoints, see package checkpoint) and names the first bad entry, or
// the narrowest window of entries it can be in.
package journal
