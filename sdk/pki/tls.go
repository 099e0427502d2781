package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// ServerTLS returns the TLS configuration of a server running as identity
// name: its certificate from dir, TLS 1.3 only, and a client certificate
// that verifies against the dev CA is required.
func ServerTLS(dir, name string) (*tls.Config, error) {
	cert, pool, err := loadTLSMaterial(dir, name)
	if err != nil {
		return nil, fmt.Errorf("server tls: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// ClientTLS returns the TLS configuration of a client running as identity
// name: its certificate from dir, TLS 1.3 only, and servers verified against
// the dev CA under the name "localhost" (every dev certificate carries it).
func ClientTLS(dir, name string) (*tls.Config, error) {
	cert, pool, err := loadTLSMaterial(dir, name)
	if err != nil {
		return nil, fmt.Errorf("client tls: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   "localhost",
		MinVersion:   tls.VersionTLS13,
	}, nil
}

func loadTLSMaterial(dir, name string) (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(certPath(dir, name), keyPath(dir, name))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("identity %q: %w", name, err)
	}
	ca, err := readCertificate(caCertPath(dir))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return cert, pool, nil
}
