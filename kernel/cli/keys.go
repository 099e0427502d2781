package cli

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/spf13/pflag"
	"golang.org/x/mod/sumdb/note"
)

// keyFlags name the public keys offline checks use: a --keys file, or the
// signing keys (<name>.sign.pub) in the PKI folder.
type keyFlags struct {
	keys, kernelKey, origin string
	pkiDir                  *string
}

// register adds the flags; pkiDir is a --pki flag already registered, or
// nil to register one.
func (k *keyFlags) register(fs *pflag.FlagSet, pkiDir *string) {
	fs.StringVar(&k.keys, "keys", "", "public keys file: one \"KEY_ID BASE64_ED25519_KEY\" per line (default: the signing keys in --pki)")
	fs.StringVar(&k.kernelKey, "kernel-key", "kernel", "key id of the kernel, which signs checkpoints")
	fs.StringVar(&k.origin, "origin", "", "the log's origin (default: the one the checkpoint names)")
	if pkiDir == nil {
		pkiDir = fs.String("pki", ".ambit/pki", "directory of the dev PKI, for its public signing keys")
	}
	k.pkiDir = pkiDir
}

// ring loads the public keys.
func (k *keyFlags) ring() (envelope.Keyring, error) {
	if k.keys != "" {
		return readKeys(k.keys)
	}
	paths, err := filepath.Glob(filepath.Join(*k.pkiDir, "*.sign.pub"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no public signing keys (*.sign.pub) in %s: give --keys or --pki", *k.pkiDir)
	}
	ring := envelope.Keyring{}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".sign.pub")
		pub, err := pki.LoadPublicKey(*k.pkiDir, name)
		if err != nil {
			return nil, err
		}
		ring[name] = pub
	}
	return ring, nil
}

func readKeys(path string) (envelope.Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	ring := envelope.Keyring{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, b64, ok := strings.Cut(line, " ")
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if !ok || err != nil || len(key) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("keys %s line %d: want \"KEY_ID BASE64_ED25519_KEY\"", path, n)
		}
		if _, dup := ring[id]; dup {
			return nil, fmt.Errorf("keys %s line %d: key %q twice", path, n, id)
		}
		ring[id] = ed25519.PublicKey(key)
	}
	return ring, sc.Err()
}

// logVerifier checks the kernel's checkpoints: its key from the ring,
// under --origin or, by default, the origin the checkpoint note names
// (the key hash binds the two, so another origin does not verify).
func (k *keyFlags) logVerifier(ring envelope.Keyring, signedNote []byte) (note.Verifier, error) {
	pub, ok := ring[k.kernelKey]
	if !ok {
		return nil, fmt.Errorf("no public key for the kernel %q", k.kernelKey)
	}
	origin := k.origin
	if origin == "" {
		origin, _, _ = strings.Cut(string(signedNote), "\n")
	}
	v, err := checkpoint.NewVerifier(origin, pub)
	if err != nil {
		return nil, fmt.Errorf("checkpoint verifier: %w", err)
	}
	return v, nil
}

// firstNote is the checkpoint note at path: the file, or a directory's
// latest checkpoint.
func firstNote(path string) ([]byte, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, checkpoint.Latest)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return data, nil
}
