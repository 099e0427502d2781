// Package envelope signs and opens Ambit's receipts and capabilities.
//
// A record travels as a receiptv1.Envelope: the serialised message, its
// full type name, the signer's key id and an Ed25519 signature over a
// pre-authentication encoding of type and bytes. Verifiers check the exact
// bytes they were given and only then decode them, so no canonical
// serialisation is needed in any language. [Sign] seals, [Open] verifies
// and decodes, [Hash] identifies an envelope's payload.
package envelope
