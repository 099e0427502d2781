// Package pki is Ambit's development PKI and the peer identity every Ambit
// process derives from it.
//
// Every Ambit process (kernel, adapters, verifier, agents, governance tools)
// authenticates with mutual TLS. A peer's identity is its certificate: the
// Name is the Subject CommonName and the [Role] is a URI SAN of the form
// ambit://role/<role>. Nothing else a peer sends (metadata, request fields)
// is trusted for identity. Both ends check roles: a server authorises the
// client's role per method (package serve), and a client requires the
// role it expects of the server ([Expect]).
//
// Entry points:
//
//   - [DevInit] writes a local CA and, per [Identity], a folder with its
//     TLS certificate and key, its Ed25519 receipt-signing key pair, the CA
//     certificate and the public keys of the identities that sign. It is
//     idempotent and adds identities to an existing PKI. [Identities] lists
//     the folders present.
//   - [DefaultIdentities] lists the principals a local Ambit deployment needs.
//   - [LoadLocal] loads the identity a process runs as and refuses a
//     certificate of another role; [Local.ServerTLS] and [Local.ClientTLS]
//     build TLS 1.3 configurations from it that pick up a renewed
//     certificate without a restart. [ServerTLS] and [ClientTLS] do both
//     steps.
//   - [PeerFromContext] returns the verified [Identity] of the peer of a gRPC
//     call; [IdentityFromCert] does the same for a certificate.
//   - [LoadSigningKey] and [LoadPublicKey] read the receipt-signing keys.
//
// Layout under the root passed to [DevInit]:
//
//	ca/ca.pem, ca/ca.key             the CA; no process reads this folder
//	<name>/                          identity name's folder: its pki_dir
//	  ca.pem                         the CA certificate
//	  <name>.pem, <name>.key         its TLS certificate and key (0600)
//	  <name>.sign.key                its Ed25519 signing key, PKCS#8 PEM (0600)
//	  <name>.sign.pub                its Ed25519 public key, PKIX PEM
//	  <peer>.sign.pub                the public key of each identity that
//	                                 signs (kernel, adapters, verifier)
//
// The CA is for development and tests only.
package pki
