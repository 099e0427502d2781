package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Expect is what a client requires of the server it connects to. The
// certificate chain is verified against the CA first; then the server's
// certificate must carry Role, so that an adapter pointed at an agent's
// (or any other) process refuses it rather than trusting it as its kernel.
type Expect struct {
	// Role is the role the server's certificate must carry (required).
	Role Role
	// ServerName is the name the server's certificate must be valid for.
	// Empty means the host of the address dialled (gRPC fills it in);
	// development certificates are valid for localhost, 127.0.0.1, ::1
	// and their identity's name.
	ServerName string
}

// check verifies the server's role in a verified connection.
func (e Expect) check(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server presented no certificate")
	}
	id, err := IdentityFromCert(cs.PeerCertificates[0])
	if err != nil {
		return fmt.Errorf("server certificate: %w", err)
	}
	if id.Role != e.Role {
		return fmt.Errorf("server %q has role %s, want %s", id.Name, id.Role, e.Role)
	}
	return nil
}

// ErrWrongRole marks a process's own certificate that carries another
// role than the one the process runs as.
var ErrWrongRole = errors.New("certificate carries the wrong role")

// Local is the identity a process runs as: its certificate and key in its
// folder and the CA that verifies its peers. The certificate and key are
// read again when their files change, so a renewed certificate is served
// on the next handshake without a restart; a replacement that does not
// load, or names another identity, is ignored (the working one stays) and
// reported through OnReload.
type Local struct {
	// Identity is the name and role the certificate carries.
	Identity Identity
	// OnReload, when set before the first handshake, is told of every
	// change of the files: the new certificate, or why it was not taken.
	OnReload func(cert *x509.Certificate, err error)

	dir  string
	pool *x509.CertPool

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp [2]fileStamp
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: info.ModTime(), size: info.Size()}
}

// LoadLocal reads identity name's certificate and key and the CA
// certificate from dir (the identity's folder, as [DevInit] writes it).
// The certificate must name name and, unless role is empty, carry role: a
// process refuses to run with another role's certificate.
func LoadLocal(dir, name string, role Role) (*Local, error) {
	l := &Local{dir: dir}
	l.stamp = [2]fileStamp{stampOf(certPath(dir, name)), stampOf(keyPath(dir, name))}
	cert, id, err := loadPair(dir, name)
	if err != nil {
		return nil, err
	}
	if role != "" && id.Role != role {
		return nil, fmt.Errorf("identity %q: %s has role %s, want %s: %w", name, certPath(dir, name), id.Role, role, ErrWrongRole)
	}
	ca, err := readCertificate(caCertPath(dir))
	if err != nil {
		return nil, fmt.Errorf("identity %q: CA: %w", name, err)
	}
	l.pool = x509.NewCertPool()
	l.pool.AddCert(ca)
	l.cert, l.Identity = cert, id
	return l, nil
}

// loadPair reads and checks a certificate and its key.
func loadPair(dir, name string) (*tls.Certificate, Identity, error) {
	cert, err := tls.LoadX509KeyPair(certPath(dir, name), keyPath(dir, name))
	if err != nil {
		return nil, Identity{}, fmt.Errorf("identity %q: %w", name, err)
	}
	id, err := IdentityFromCert(cert.Leaf)
	if err != nil {
		return nil, Identity{}, fmt.Errorf("identity %q: %s: %w", name, certPath(dir, name), err)
	}
	if id.Name != name {
		return nil, Identity{}, fmt.Errorf("identity %q: %s is the certificate of %q", name, certPath(dir, name), id.Name)
	}
	return &cert, id, nil
}

// Certificate returns the certificate to present, read again first if its
// files changed.
func (l *Local) Certificate() *tls.Certificate {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := [2]fileStamp{stampOf(certPath(l.dir, l.Identity.Name)), stampOf(keyPath(l.dir, l.Identity.Name))}
	if now == l.stamp {
		return l.cert
	}
	// The stamps are remembered also when the new files do not load (a
	// certificate written before its key, say): they are retried once
	// either changes again, not on every handshake.
	l.stamp = now
	cert, id, err := loadPair(l.dir, l.Identity.Name)
	if err == nil && id != l.Identity {
		err = fmt.Errorf("identity %q: the new certificate has role %s, want %s: %w", l.Identity.Name, id.Role, l.Identity.Role, ErrWrongRole)
	}
	if err != nil {
		if l.OnReload != nil {
			l.OnReload(nil, err)
		}
		return l.cert
	}
	l.cert = cert
	if l.OnReload != nil {
		l.OnReload(cert.Leaf, nil)
	}
	return l.cert
}

// ServerTLS returns the TLS configuration of a server running as l: TLS
// 1.3 only, its current certificate, and a client certificate that
// verifies against the CA required.
func (l *Local) ServerTLS() *tls.Config {
	return &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return l.Certificate(), nil },
		ClientCAs:      l.pool,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		MinVersion:     tls.VersionTLS13,
	}
}

// ClientTLS returns the TLS configuration of a client running as l: TLS
// 1.3 only, its current certificate, and a server that verifies against
// the CA and meets server.
func (l *Local) ClientTLS(server Expect) (*tls.Config, error) {
	if !server.Role.Valid() {
		return nil, fmt.Errorf("client tls: expected server role %q is not a role", server.Role)
	}
	return &tls.Config{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return l.Certificate(), nil },
		RootCAs:              l.pool,
		ServerName:           server.ServerName,
		MinVersion:           tls.VersionTLS13,
		VerifyConnection:     server.check,
	}, nil
}

// ServerTLS is [LoadLocal] (any role) followed by [Local.ServerTLS].
func ServerTLS(dir, name string) (*tls.Config, error) {
	l, err := LoadLocal(dir, name, "")
	if err != nil {
		return nil, fmt.Errorf("server tls: %w", err)
	}
	return l.ServerTLS(), nil
}

// ClientTLS is [LoadLocal] (any role) followed by [Local.ClientTLS].
func ClientTLS(dir, name string, server Expect) (*tls.Config, error) {
	l, err := LoadLocal(dir, name, "")
	if err != nil {
		return nil, fmt.Errorf("client tls: %w", err)
	}
	return l.ClientTLS(server)
}
