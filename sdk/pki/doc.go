// Package pki is Ambit's development PKI and the peer identity every Ambit
// process derives from it.
//
// Every Ambit process (kernel, adapters, verifier, agents, governance tools)
// authenticates with mutual TLS. A peer's identity is its certificate: the
// Name is the Subject CommonName and the [Role] is a URI SAN of the form
// ambit://role/<role>. Nothing else a peer sends (metadata, request fields)
// is trusted for identity.
//
// Entry points:
//
//   - [DevInit] writes a local CA, one TLS certificate per [Identity] and an
//     Ed25519 receipt-signing key pair per identity into a directory. It is
//     idempotent: files that already exist are checked and kept.
//   - [DefaultIdentities] lists the principals a local Ambit deployment needs.
//   - [ServerTLS] and [ClientTLS] build TLS 1.3 configurations from those
//     files; the server requires and verifies a client certificate.
//   - [PeerFromContext] returns the verified [Identity] of the peer of a gRPC
//     call; [IdentityFromCert] does the same for a certificate.
//   - [LoadSigningKey] and [LoadPublicKey] read the receipt-signing keys.
//
// File layout in the directory passed to [DevInit]:
//
//	ca.pem, ca.key                 the CA certificate and its key (0600)
//	<name>.pem, <name>.key         the identity's TLS certificate and key (0600)
//	<name>.sign.key                Ed25519 signing key, PKCS#8 PEM (0600)
//	<name>.sign.pub                Ed25519 public key, PKIX PEM
//
// The CA is for development and tests only: its key sits on disk next to the
// certificates it signs.
package pki
