package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// clockSkew backdates NotBefore so that peers whose clocks lag a little
	// accept a certificate issued a moment ago.
	clockSkew = 5 * time.Minute

	caName = "ca"

	pemCertificate = "CERTIFICATE"
	pemPrivateKey  = "PRIVATE KEY"
	pemPublicKey   = "PUBLIC KEY"

	modeSecret = 0o600
	modePublic = 0o644
	modeDir    = 0o700
)

// namePattern keeps identity names usable as file names. Dots are excluded
// so that "<a>.sign" can never collide with identity a's signing key files.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Paths of the files DevInit writes, relative to a folder: the CA's
// folder or an identity's.
func caCertPath(dir string) string           { return filepath.Join(dir, caName+".pem") }
func caKeyPath(dir string) string            { return filepath.Join(dir, caName+".key") }
func certPath(dir, name string) string       { return filepath.Join(dir, name+".pem") }
func keyPath(dir, name string) string        { return filepath.Join(dir, name+".key") }
func signKeyPath(dir, name string) string    { return filepath.Join(dir, name+".sign.key") }
func signPubKeyPath(dir, name string) string { return filepath.Join(dir, name+".sign.pub") }

// CADir is the folder of the CA's certificate and key under root, the
// folder [DevInit] writes. No process reads it; keep it away from them.
func CADir(root string) string { return filepath.Join(root, caName) }

// IdentityDir is identity name's folder under root: the pki_dir of the
// process that runs as name.
func IdentityDir(root, name string) string { return filepath.Join(root, name) }

// signs reports whether identities of role r sign receipts or
// capabilities that others verify, so that every folder carries their
// public keys.
func (r Role) signs() bool {
	switch r {
	case RoleKernel, RoleEvidence, RoleAction, RoleVerifier:
		return true
	}
	return false
}

// DevInit writes a development PKI under root: the CA in its own folder
// ([CADir]: ca.pem, ca.key) and, for each identity, a folder of its own
// ([IdentityDir]) holding what that process needs and nothing more:
//
//	ca.pem                      the CA certificate, to verify peers
//	<name>.pem, <name>.key      its TLS certificate, signed by the CA, and key
//	<name>.sign.key/.sign.pub   its Ed25519 receipt-signing key pair
//	<peer>.sign.pub             the public key of every identity whose
//	                            role signs (kernel, adapters, verifier)
//
// No folder but the CA's holds another identity's private key or the CA
// key, so a process given its own folder as pki_dir cannot act as another.
//
// It is idempotent, and adds identities to an existing PKI (e.g. one more
// agent): files that already exist are kept, after checking that they
// still fit: the CA key matches the CA certificate, an identity's
// certificate verifies against the CA, matches its key and carries the
// requested name and role. A half-present pair (a certificate without its
// key, say) is an error rather than silently replaced; remove both files to
// have them issued again. Public keys are copied again whenever they
// differ, so a re-run brings every folder up to date.
//
// The TLS keys are ECDSA P-256, which every TLS 1.3 peer supports. Leaf
// certificates are valid for a year, for both server and client
// authentication, for "localhost", the identity's name, 127.0.0.1 and ::1.
func DevInit(root string, ids []Identity) error {
	if err := validateIdentities(ids); err != nil {
		return fmt.Errorf("dev init: %w", err)
	}
	// The first layout kept every key, the CA's included, in one folder
	// that every process read; refuse to build on it.
	if old, err := exists(filepath.Join(root, caName+".key")); err != nil || old {
		if err == nil {
			err = fmt.Errorf("%s holds the old single-folder layout (ca.key beside every key); move it away and run dev init again", root)
		}
		return fmt.Errorf("dev init: %w", err)
	}
	if err := os.MkdirAll(CADir(root), modeDir); err != nil {
		return fmt.Errorf("dev init: create directory: %w", err)
	}
	now := time.Now()
	ca, caKey, err := ensureCA(CADir(root), now)
	if err != nil {
		return fmt.Errorf("dev init: %w", err)
	}
	caPEM, err := os.ReadFile(caCertPath(CADir(root)))
	if err != nil {
		return fmt.Errorf("dev init: %w", err)
	}
	for _, id := range ids {
		dir := IdentityDir(root, id.Name)
		if err := os.MkdirAll(dir, modeDir); err != nil {
			return fmt.Errorf("dev init: identity %q: %w", id.Name, err)
		}
		if err := ensureLeaf(dir, id, ca, caKey, now); err != nil {
			return fmt.Errorf("dev init: identity %q: %w", id.Name, err)
		}
		if err := ensureSigningKey(dir, id.Name); err != nil {
			return fmt.Errorf("dev init: identity %q: %w", id.Name, err)
		}
		if err := ensureCopy(caCertPath(dir), caPEM); err != nil {
			return fmt.Errorf("dev init: identity %q: %w", id.Name, err)
		}
	}
	if err := distributePublicKeys(root); err != nil {
		return fmt.Errorf("dev init: %w", err)
	}
	return nil
}

// Identities lists the identities that have a folder under root, as their
// certificates name them, sorted by name.
func Identities(root string) ([]Identity, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list identities: %w", err)
	}
	var out []Identity
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == caName || !namePattern.MatchString(name) {
			continue
		}
		cert, err := readCertificate(certPath(IdentityDir(root, name), name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list identities: %w", err)
		}
		id, err := IdentityFromCert(cert)
		if err != nil {
			return nil, fmt.Errorf("list identities: %s: %w", name, err)
		}
		if id.Name != name {
			return nil, fmt.Errorf("list identities: folder %s holds the certificate of %s", name, id.Name)
		}
		out = append(out, id)
	}
	return out, nil
}

// distributePublicKeys copies the public key of every identity whose role
// signs into every other identity's folder.
func distributePublicKeys(root string) error {
	ids, err := Identities(root)
	if err != nil {
		return err
	}
	for _, signer := range ids {
		if !signer.Role.signs() {
			continue
		}
		pub, err := os.ReadFile(signPubKeyPath(IdentityDir(root, signer.Name), signer.Name))
		if err != nil {
			return fmt.Errorf("public key of %s: %w", signer.Name, err)
		}
		for _, id := range ids {
			if id.Name == signer.Name {
				continue
			}
			if err := ensureCopy(signPubKeyPath(IdentityDir(root, id.Name), signer.Name), pub); err != nil {
				return fmt.Errorf("public key of %s for %s: %w", signer.Name, id.Name, err)
			}
		}
	}
	return nil
}

// ensureCopy writes public data to path unless path already holds it.
func ensureCopy(path string, data []byte) error {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return writeFileAtomic(path, data, modePublic)
}

func validateIdentities(ids []Identity) error {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !namePattern.MatchString(id.Name) || id.Name == caName {
			return fmt.Errorf("identity name %q: want 1 to 63 of a-z, 0-9, '-', '_', starting with a letter or digit, and not %q", id.Name, caName)
		}
		if !id.Role.Valid() {
			return fmt.Errorf("identity %q: unknown role %q", id.Name, id.Role)
		}
		if seen[id.Name] {
			return fmt.Errorf("identity %q listed twice", id.Name)
		}
		seen[id.Name] = true
	}
	return nil
}

// pairState reports whether both, neither or only one of two files exist.
func pairState(a, b string) (bothExist bool, err error) {
	aOK, err := exists(a)
	if err != nil {
		return false, err
	}
	bOK, err := exists(b)
	if err != nil {
		return false, err
	}
	switch {
	case aOK && bOK:
		return true, nil
	case !aOK && !bOK:
		return false, nil
	case aOK:
		return false, fmt.Errorf("%s exists but %s does not; remove %s to reissue", a, b, a)
	default:
		return false, fmt.Errorf("%s exists but %s does not; remove %s to reissue", b, a, b)
	}
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

func ensureCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	certFile, keyFile := caCertPath(dir), caKeyPath(dir)
	present, err := pairState(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	if present {
		return loadCA(certFile, keyFile)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Ambit dev CA", Organization: []string{"Ambit"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaves only, never intermediates.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: parse certificate: %w", err)
	}
	keyPEM, err := privateKeyPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	// Key first: a crash in between leaves a key without a certificate,
	// which pairState reports instead of reusing.
	if err := writeFileAtomic(keyFile, keyPEM, modeSecret); err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	if err := writeFileAtomic(certFile, certificatePEM(der), modePublic); err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	return cert, key, nil
}

func loadCA(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	cert, err := readCertificate(certFile)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("ca: %s is not a CA certificate", certFile)
	}
	key, err := readPrivateKey(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("ca: %s: key of type %T cannot sign", keyFile, key)
	}
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signer.Public()) {
		return nil, nil, fmt.Errorf("ca: %s does not match %s", keyFile, certFile)
	}
	return cert, signer, nil
}

func ensureLeaf(dir string, id Identity, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	certFile, keyFile := certPath(dir, id.Name), keyPath(dir, id.Name)
	present, err := pairState(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	if present {
		return checkLeaf(certFile, keyFile, id, ca, now)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tls certificate: generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:         id.Name,
			Organization:       []string{"Ambit"},
			OrganizationalUnit: []string{string(id.Role)},
		},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(leafValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost", id.Name},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		URIs:                  []*url.URL{roleURI(id.Role)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("tls certificate: create: %w", err)
	}
	keyPEM, err := privateKeyPEM(key)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	if err := writeFileAtomic(keyFile, keyPEM, modeSecret); err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	if err := writeFileAtomic(certFile, certificatePEM(der), modePublic); err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	return nil
}

// checkLeaf makes sure an existing certificate is one DevInit would have
// issued for id now, so that a stale or foreign file is reported at set-up
// rather than as a handshake failure later.
func checkLeaf(certFile, keyFile string, id Identity, ca *x509.Certificate, now time.Time) error {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("tls certificate: %s and %s: %w", certFile, keyFile, err)
	}
	cert, err := parseCertificatePEM(certFile, certPEM)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = cert.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return fmt.Errorf("tls certificate: %s does not verify against the CA (remove it and its key to reissue): %w", certFile, err)
	}
	got, err := IdentityFromCert(cert)
	if err != nil {
		return fmt.Errorf("tls certificate: %s: %w", certFile, err)
	}
	if got != id {
		return fmt.Errorf("tls certificate: %s is for %s/%s, want %s/%s (remove it and its key to reissue)",
			certFile, got.Name, got.Role, id.Name, id.Role)
	}
	return nil
}

func ensureSigningKey(dir, name string) error {
	keyFile, pubFile := signKeyPath(dir, name), signPubKeyPath(dir, name)
	present, err := pairState(keyFile, pubFile)
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	if present {
		priv, err := LoadSigningKey(dir, name)
		if err != nil {
			return err
		}
		pub, err := LoadPublicKey(dir, name)
		if err != nil {
			return err
		}
		if !pub.Equal(priv.Public()) {
			return fmt.Errorf("signing key: %s does not match %s", pubFile, keyFile)
		}
		return nil
	}

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("signing key: generate: %w", err)
	}
	keyPEM, err := privateKeyPEM(priv)
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fmt.Errorf("signing key: marshal public key: %w", err)
	}
	if err := writeFileAtomic(keyFile, keyPEM, modeSecret); err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: pubDER})
	if err := writeFileAtomic(pubFile, pubPEM, modePublic); err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	return nil
}

// randomSerial returns a positive random serial of 128 bits, as RFC 5280
// allows up to 20 octets.
func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("random serial: %w", err)
	}
	// Zero is not a valid serial.
	return serial.Add(serial, big.NewInt(1)), nil
}

func certificatePEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
}

func privateKeyPEM(key any) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so readers never see a partial file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp already uses 0600; Chmod sets the final mode before any
	// content is written, so a secret is never readable by others.
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readPEM returns the single PEM block of type typ in path.
func readPEM(path, typ string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *fs.PathError names the operation and the path
	}
	return decodePEM(path, data, typ)
}

func decodePEM(path string, data []byte, typ string) ([]byte, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("read %s: no PEM block", path)
	}
	if block.Type != typ {
		return nil, fmt.Errorf("read %s: PEM block %q, want %q", path, block.Type, typ)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("read %s: trailing data after the %s block", path, typ)
	}
	return block.Bytes, nil
}

func readCertificate(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *fs.PathError names the operation and the path
	}
	return parseCertificatePEM(path, data)
}

func parseCertificatePEM(path string, data []byte) (*x509.Certificate, error) {
	der, err := decodePEM(path, data, pemCertificate)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return cert, nil
}

func readPrivateKey(path string) (any, error) {
	der, err := readPEM(path, pemPrivateKey)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return key, nil
}
