// Package envelope signs and opens Ambit's receipts and capabilities.
//
// A record travels as a receiptv1.Envelope: the serialised message, its
// full type name, the signer's key id and an Ed25519 signature over a
// pre-authentication encoding of type and bytes. Verifiers check the exact
// bytes they were given and only then decode them, so no canonical
// serialisation is needed in any language. [Signer.Sign] and
// [Signer.SignAll] seal, [Keyring.Open] verifies and decodes, [Hash]
// identifies an envelope's payload.
//
// Records sealed at the same moment share one signature: over the root of
// an RFC 6962 Merkle tree whose leaves are their encodings, each envelope
// carrying its leaf's inclusion path (receiptv1.Batch). The records of one
// call to SignAll, and those of callers that arrive while a signature is
// being made (or are ready to run when a batch starts), are sealed
// together, so a busy signer makes one signature per batch rather than one
// per record. A record sealed alone is signed alone, exactly as before
// batches existed.
package envelope
