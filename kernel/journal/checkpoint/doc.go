// Package checkpoint signs, stores and verifies the checkpoints of the
// kernel's log: C2SP signed notes (as Go's checksum database and
// Certificate Transparency logs publish) that commit to the tree's size
// and root hash.
//
// A [Signer] signs with the kernel's Ed25519 key under the log's origin, so
// the kernel's public key alone ([NewVerifier]) checks checkpoints as it
// checks receipts. [Open] verifies a checkpoint strictly: the log's
// signature, the origin, and a canonical encoding, so that no byte of an
// accepted checkpoint can change. [Dir] is the checkpoint directory, kept
// outside the database, one file per checkpoint plus the latest, each
// written atomically. A [Publisher] signs the journal's head at least every
// N entries or T and serves the latest.
package checkpoint
