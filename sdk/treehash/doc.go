// Package treehash hashes RFC 6962 Merkle trees, as the transparency-dev
// library's rfc6962.DefaultHasher does, without a digest allocated for
// every node: the kernel's journal and the records signed in one batch
// hash several nodes for every decision. [Hasher] is a merkle.LogHasher,
// so the library's proofs and compact ranges use it.
package treehash
