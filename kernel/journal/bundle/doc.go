// Package bundle exports one receipt from the kernel's log as a
// self-contained bundle, and verifies such a bundle offline.
//
// A bundle (ambit.log.v1.ReceiptBundle) holds the signed envelope, the
// journal entry that records it, the entry's leaf index, its inclusion
// proof and the signed checkpoint the proof is against. [Export] builds it
// from the store and the checkpoint publisher; [Verify] checks, with public
// keys only, the issuer's signature, the checkpoint's signature, that the
// entry records exactly that envelope, and the inclusion proof; and it
// refuses a bundle whose bytes are not exactly those [Marshal] writes, so
// that no byte of a bundle that verifies can change.
package bundle
