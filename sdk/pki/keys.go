package pki

import (
	"crypto/ed25519"
	"crypto/x509"
	"fmt"
)

// LoadSigningKey reads the Ed25519 receipt-signing key of identity name
// (<name>.sign.key in dir, as written by [DevInit]).
func LoadSigningKey(dir, name string) (ed25519.PrivateKey, error) {
	path := signKeyPath(dir, name)
	key, err := readPrivateKey(path)
	if err != nil {
		return nil, fmt.Errorf("load signing key: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("load signing key: %s holds a %T, want an Ed25519 key", path, key)
	}
	return priv, nil
}

// LoadPublicKey reads the Ed25519 receipt-verification key of identity name
// (<name>.sign.pub in dir, as written by [DevInit]).
func LoadPublicKey(dir, name string) (ed25519.PublicKey, error) {
	path := signPubKeyPath(dir, name)
	der, err := readPEM(path, pemPublicKey)
	if err != nil {
		return nil, fmt.Errorf("load public key: %w", err)
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("load public key: %s: %w", path, err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("load public key: %s holds a %T, want an Ed25519 key", path, key)
	}
	return pub, nil
}
