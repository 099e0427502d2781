package pki_test

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// devInit writes the default identities into a fresh directory.
func devInit(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	if err := pki.DevInit(dir, pki.DefaultIdentities()); err != nil {
		t.Fatalf("DevInit: %v", err)
	}
	return dir
}

type fileState struct {
	Mode    fs.FileMode
	Content string
}

// snapshot maps every file and folder under root (by slash-separated
// relative path) to its mode and content.
func snapshot(t *testing.T, root string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		st := fileState{Mode: info.Mode().Perm()}
		if !e.IsDir() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			st.Content = string(data)
		}
		out[filepath.ToSlash(rel)] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDevInitIdempotent(t *testing.T) {
	dir := devInit(t)
	first := snapshot(t, dir)

	if err := pki.DevInit(dir, pki.DefaultIdentities()); err != nil {
		t.Fatalf("second DevInit: %v", err)
	}
	if diff := cmp.Diff(first, snapshot(t, dir)); diff != "" {
		t.Errorf("second DevInit changed files (-first +second):\n%s", diff)
	}

	// Adding an identity later issues its files and keeps the others.
	more := append(pki.DefaultIdentities(), pki.Identity{Name: "agent-2", Role: pki.RoleAgent})
	if err := pki.DevInit(dir, more); err != nil {
		t.Fatalf("DevInit with a new identity: %v", err)
	}
	after := snapshot(t, dir)
	for name, st := range first {
		if diff := cmp.Diff(st, after[name]); diff != "" {
			t.Errorf("%s changed when adding an identity (-before +after):\n%s", name, diff)
		}
	}
	for _, f := range []string{"agent-2.pem", "agent-2.key", "agent-2.sign.key", "agent-2.sign.pub", "ca.pem", "kernel.sign.pub"} {
		if _, ok := after["agent-2/"+f]; !ok {
			t.Errorf("agent-2/%s not written", f)
		}
	}

	// One folder per identity with its own private keys only, the public
	// keys of the identities that sign, and the CA apart.
	signers := []string{"action", "evidence", "kernel", "verifier"}
	wantNames := []string{"ca", "ca/ca.key", "ca/ca.pem"}
	for _, id := range pki.DefaultIdentities() {
		n := id.Name
		wantNames = append(wantNames, n, n+"/ca.pem", n+"/"+n+".pem", n+"/"+n+".key", n+"/"+n+".sign.key", n+"/"+n+".sign.pub")
		for _, s := range signers {
			if s != n {
				wantNames = append(wantNames, n+"/"+s+".sign.pub")
			}
		}
	}
	var gotNames []string
	for name := range first {
		gotNames = append(gotNames, name)
	}
	slices.Sort(wantNames)
	slices.Sort(gotNames)
	if diff := cmp.Diff(wantNames, gotNames); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o700 {
		t.Errorf("directory mode = %v, want 0700", got)
	}
	for name, st := range first {
		if !strings.Contains(name, ".") {
			if st.Mode != 0o700 {
				t.Errorf("folder %s mode = %v, want 0700", name, st.Mode)
			}
			continue
		}
		secret := filepath.Ext(name) == ".key"
		if secret && st.Mode != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, st.Mode)
		}
		if !secret && st.Mode&0o077&^0o044 != 0 {
			t.Errorf("%s mode = %v, want no write or execute for others", name, st.Mode)
		}
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" || len(rest) != 0 {
		t.Fatalf("%s: want exactly one CERTIFICATE block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func TestDevInitCertificates(t *testing.T) {
	root := devInit(t)
	ca := readCert(t, filepath.Join(pki.CADir(root), "ca.pem"))
	if !ca.IsCA {
		t.Fatal("ca.pem is not a CA certificate")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	for _, id := range pki.DefaultIdentities() {
		t.Run(id.Name, func(t *testing.T) {
			dir := pki.IdentityDir(root, id.Name)
			if diff := cmp.Diff(ca.Raw, readCert(t, filepath.Join(dir, "ca.pem")).Raw); diff != "" {
				t.Error("the identity's ca.pem is not the CA certificate")
			}
			leaf := readCert(t, filepath.Join(dir, id.Name+".pem"))
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: "localhost"}); err != nil {
					t.Errorf("Verify(usage %v): %v", usage, err)
				}
			}
			got, err := pki.IdentityFromCert(leaf)
			if err != nil {
				t.Fatalf("IdentityFromCert: %v", err)
			}
			if diff := cmp.Diff(id, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"ambit://role/" + string(id.Role)}, urisOf(leaf)); diff != "" {
				t.Errorf("URI SANs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{string(id.Role)}, leaf.Subject.OrganizationalUnit); diff != "" {
				t.Errorf("OU (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"localhost", id.Name}, leaf.DNSNames); diff != "" {
				t.Errorf("DNS SANs (-want +got):\n%s", diff)
			}
			var ips []string
			for _, ip := range leaf.IPAddresses {
				ips = append(ips, ip.String())
			}
			if diff := cmp.Diff([]string{"127.0.0.1", "::1"}, ips); diff != "" {
				t.Errorf("IP SANs (-want +got):\n%s", diff)
			}
			if leaf.IsCA {
				t.Error("leaf is a CA")
			}
			if life := leaf.NotAfter.Sub(leaf.NotBefore); life < 364*24*time.Hour || life > 367*24*time.Hour {
				t.Errorf("validity = %v, want about a year", life)
			}
			if leaf.SerialNumber.Sign() <= 0 {
				t.Errorf("serial %v is not positive", leaf.SerialNumber)
			}
		})
	}
}

func urisOf(c *x509.Certificate) []string {
	var out []string
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDevInitErrors(t *testing.T) {
	kernel := []pki.Identity{{Name: "kernel", Role: pki.RoleKernel}}
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) // runs after a successful DevInit(dir, kernel)
		ids     []pki.Identity
		wantErr string // a substring of the error
	}{
		{name: "empty name", ids: []pki.Identity{{Name: "", Role: pki.RoleAgent}}, wantErr: "identity name"},
		{name: "name with a path separator", ids: []pki.Identity{{Name: "../x", Role: pki.RoleAgent}}, wantErr: "identity name"},
		{name: "name with a dot", ids: []pki.Identity{{Name: "x.sign", Role: pki.RoleAgent}}, wantErr: "identity name"},
		{name: "name of the CA", ids: []pki.Identity{{Name: "ca", Role: pki.RoleAgent}}, wantErr: "identity name"},
		{name: "unknown role", ids: []pki.Identity{{Name: "x", Role: "root"}}, wantErr: "unknown role"},
		{name: "empty role", ids: []pki.Identity{{Name: "x"}}, wantErr: "unknown role"},
		{name: "duplicate name", ids: []pki.Identity{{Name: "x", Role: pki.RoleAgent}, {Name: "x", Role: pki.RoleKernel}}, wantErr: "listed twice"},
		{
			name:    "role changed for an existing identity",
			wantErr: "is for kernel/kernel, want kernel/governance",
			setup:   func(*testing.T, string) {},
			ids:     []pki.Identity{{Name: "kernel", Role: pki.RoleGovernance}},
		},
		{
			name:    "old single-folder layout",
			wantErr: "old single-folder layout",
			setup: func(t *testing.T, dir string) {
				copyFile(t, filepath.Join(dir, "ca", "ca.key"), filepath.Join(dir, "ca.key"))
			},
			ids: kernel,
		},
		{
			name:    "folder holding another identity's certificate",
			wantErr: "folder agent holds the certificate of kernel",
			setup: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "agent"), 0o700); err != nil {
					t.Fatal(err)
				}
				copyFile(t, filepath.Join(dir, "kernel", "kernel.pem"), filepath.Join(dir, "agent", "agent.pem"))
				copyFile(t, filepath.Join(dir, "kernel", "kernel.key"), filepath.Join(dir, "agent", "agent.key"))
			},
			ids: kernel,
		},
		{
			name:    "certificate without its key",
			wantErr: "kernel.key does not",
			setup: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "kernel", "kernel.key")); err != nil {
					t.Fatal(err)
				}
			},
			ids: kernel,
		},
		{
			name:    "CA key without its certificate",
			wantErr: "ca.pem does not",
			setup: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "ca", "ca.pem")); err != nil {
					t.Fatal(err)
				}
			},
			ids: kernel,
		},
		{
			name:    "signing key without its public key",
			wantErr: "kernel.sign.pub does not",
			setup: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "kernel", "kernel.sign.pub")); err != nil {
					t.Fatal(err)
				}
			},
			ids: kernel,
		},
		{
			name:    "certificate from another CA",
			wantErr: "does not verify against the CA",
			setup: func(t *testing.T, dir string) {
				other := t.TempDir()
				if err := pki.DevInit(other, kernel); err != nil {
					t.Fatal(err)
				}
				copyFile(t, filepath.Join(other, "kernel", "kernel.pem"), filepath.Join(dir, "kernel", "kernel.pem"))
				copyFile(t, filepath.Join(other, "kernel", "kernel.key"), filepath.Join(dir, "kernel", "kernel.key"))
			},
			ids: kernel,
		},
		{
			name:    "certificate and key that do not match",
			wantErr: "private key does not match",
			setup: func(t *testing.T, dir string) {
				if err := pki.DevInit(dir, []pki.Identity{{Name: "other", Role: pki.RoleKernel}}); err != nil {
					t.Fatal(err)
				}
				copyFile(t, filepath.Join(dir, "other", "other.key"), filepath.Join(dir, "kernel", "kernel.key"))
			},
			ids: kernel,
		},
		{
			name:    "CA key that does not match the CA certificate",
			wantErr: "ca.key does not match",
			setup: func(t *testing.T, dir string) {
				other := t.TempDir()
				if err := pki.DevInit(other, nil); err != nil {
					t.Fatal(err)
				}
				copyFile(t, filepath.Join(other, "ca", "ca.key"), filepath.Join(dir, "ca", "ca.key"))
			},
			ids: kernel,
		},
		{
			name:    "signing key that does not match its public key",
			wantErr: "kernel.sign.pub does not match",
			setup: func(t *testing.T, dir string) {
				if err := pki.DevInit(dir, []pki.Identity{{Name: "other", Role: pki.RoleKernel}}); err != nil {
					t.Fatal(err)
				}
				copyFile(t, filepath.Join(dir, "other", "other.sign.pub"), filepath.Join(dir, "kernel", "kernel.sign.pub"))
			},
			ids: kernel,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.setup != nil {
				if err := pki.DevInit(root, kernel); err != nil {
					t.Fatal(err)
				}
				tt.setup(t, root)
			}
			err := pki.DevInit(root, tt.ids)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DevInit error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestIdentityFromCert(t *testing.T) {
	cert := func(cn string, uris ...string) *x509.Certificate {
		c := &x509.Certificate{}
		c.Subject.CommonName = cn
		for _, u := range uris {
			c.URIs = append(c.URIs, mustURL(t, u))
		}
		return c
	}
	tests := []struct {
		name    string
		cert    *x509.Certificate
		want    pki.Identity
		wantErr error
	}{
		{name: "kernel", cert: cert("kernel", "ambit://role/kernel"), want: pki.Identity{Name: "kernel", Role: pki.RoleKernel}},
		{name: "other URIs ignored", cert: cert("ev", "spiffe://example.org/ev", "ambit://role/evidence-adapter"), want: pki.Identity{Name: "ev", Role: pki.RoleEvidence}},
		{name: "nil certificate", cert: nil, wantErr: pki.ErrInvalidIdentity},
		{name: "no common name", cert: cert("", "ambit://role/kernel"), wantErr: pki.ErrInvalidIdentity},
		{name: "no role", cert: cert("kernel"), wantErr: pki.ErrInvalidIdentity},
		{name: "role in another scheme", cert: cert("kernel", "https://role/kernel"), wantErr: pki.ErrInvalidIdentity},
		{name: "unknown role", cert: cert("kernel", "ambit://role/root"), wantErr: pki.ErrInvalidIdentity},
		{name: "empty role", cert: cert("kernel", "ambit://role/"), wantErr: pki.ErrInvalidIdentity},
		{name: "two roles", cert: cert("kernel", "ambit://role/agent", "ambit://role/kernel"), wantErr: pki.ErrInvalidIdentity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pki.IdentityFromCert(tt.cert)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("IdentityFromCert error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPeerFromContext(t *testing.T) {
	leaf := &x509.Certificate{URIs: []*url.URL{mustURL(t, "ambit://role/verifier")}}
	leaf.Subject.CommonName = "verifier"
	noRole := &x509.Certificate{}
	noRole.Subject.CommonName = "verifier"
	withTLS := func(chains ...[]*x509.Certificate) context.Context {
		info := credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: chains}}
		return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: info})
	}
	tests := []struct {
		name     string
		ctx      context.Context
		want     pki.Identity
		wantErrs []error
	}{
		{name: "verified leaf", ctx: withTLS([]*x509.Certificate{leaf}), want: pki.Identity{Name: "verifier", Role: pki.RoleVerifier}},
		{name: "no peer", ctx: context.Background(), wantErrs: []error{pki.ErrNoPeerIdentity}},
		{name: "not TLS", ctx: peer.NewContext(context.Background(), &peer.Peer{}), wantErrs: []error{pki.ErrNoPeerIdentity}},
		{name: "no verified chain", ctx: withTLS(), wantErrs: []error{pki.ErrNoPeerIdentity}},
		{name: "empty chain", ctx: withTLS([]*x509.Certificate{}), wantErrs: []error{pki.ErrNoPeerIdentity}},
		{name: "leaf without role", ctx: withTLS([]*x509.Certificate{noRole}), wantErrs: []error{pki.ErrNoPeerIdentity, pki.ErrInvalidIdentity}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pki.PeerFromContext(tt.ctx)
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("PeerFromContext: %v", err)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("PeerFromContext error = %v, want it to wrap %v", err, want)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

// startHealthServer serves the gRPC health service with tlsCfg on a free
// loopback port and reports, on the returned channel, the identity that
// PeerFromContext gives for each call that reaches the server.
func startHealthServer(t *testing.T, tlsCfg *tls.Config) (string, <-chan pki.Identity) {
	t.Helper()
	seen := make(chan pki.Identity, 16)
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(tlsCfg)),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			id, err := pki.PeerFromContext(ctx)
			if err != nil {
				return nil, status.Error(codes.Unauthenticated, "no identity")
			}
			seen <- id
			return h(ctx, req)
		}),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String(), seen
}

func TestMutualTLS(t *testing.T) {
	root := devInit(t)
	foreignRoot := devInit(t) // same names, a different CA

	serverTLS := func(t *testing.T, root string) *tls.Config {
		t.Helper()
		cfg, err := pki.ServerTLS(pki.IdentityDir(root, "kernel"), "kernel")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	clientTLS := func(t *testing.T, root, name string) *tls.Config {
		t.Helper()
		cfg, err := pki.ClientTLS(pki.IdentityDir(root, name), name, pki.Expect{Role: pki.RoleKernel})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	dir, foreign := root, foreignRoot
	tests := []struct {
		name   string
		server *tls.Config
		client *tls.Config
		want   *pki.Identity // nil: the handshake must fail
	}{
		{
			name:   "agent",
			server: serverTLS(t, dir),
			client: clientTLS(t, dir, "agent"),
			want:   &pki.Identity{Name: "agent", Role: pki.RoleAgent},
		},
		{
			name:   "second governance principal",
			server: serverTLS(t, dir),
			client: clientTLS(t, dir, "policy-owner"),
			want:   &pki.Identity{Name: "policy-owner", Role: pki.RoleGovernance},
		},
		{
			name:   "client certificate from another CA",
			server: serverTLS(t, dir),
			client: func() *tls.Config {
				// Trusts the right CA but presents a certificate the server
				// cannot verify.
				cfg := clientTLS(t, dir, "agent")
				cfg.GetClientCertificate = clientTLS(t, foreign, "agent").GetClientCertificate
				return cfg
			}(),
		},
		{
			name:   "no client certificate",
			server: serverTLS(t, dir),
			client: func() *tls.Config {
				cfg := clientTLS(t, dir, "agent")
				cfg.GetClientCertificate = nil
				return cfg
			}(),
		},
		{
			name:   "server certificate from another CA",
			server: serverTLS(t, foreign),
			client: clientTLS(t, dir, "agent"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, seen := startHealthServer(t, tt.server)
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tt.client)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if tt.want == nil {
				if status.Code(err) != codes.Unavailable {
					t.Fatalf("Check error = %v, want code Unavailable from a failed handshake", err)
				}
				select {
				case id := <-seen:
					t.Fatalf("call reached the server as %+v", id)
				default:
				}
				return
			}
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(*tt.want, <-seen); diff != "" {
				t.Errorf("server saw identity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSigningKeyRoundTrip(t *testing.T) {
	dir := devInit(t)
	msg := []byte("receipt: action 42 executed")
	tests := []struct {
		name     string
		signer   string
		verifier string
		wantOK   bool
	}{
		{name: "own key", signer: "kernel", verifier: "kernel", wantOK: true},
		{name: "other identity's key", signer: "kernel", verifier: "verifier", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			priv, err := pki.LoadSigningKey(pki.IdentityDir(dir, tt.signer), tt.signer)
			if err != nil {
				t.Fatalf("LoadSigningKey: %v", err)
			}
			// Read from a third identity's folder: the copy every folder
			// holds of a signing identity's public key.
			pub, err := pki.LoadPublicKey(pki.IdentityDir(dir, "agent"), tt.verifier)
			if err != nil {
				t.Fatalf("LoadPublicKey: %v", err)
			}
			if got := ed25519.Verify(pub, msg, ed25519.Sign(priv, msg)); got != tt.wantOK {
				t.Errorf("Verify = %v, want %v", got, tt.wantOK)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := pki.IdentityDir(devInit(t), "kernel")
	tests := []struct {
		name string
		load func() error
	}{
		{name: "missing signing key", load: func() error { _, err := pki.LoadSigningKey(dir, "nobody"); return err }},
		{name: "missing public key", load: func() error { _, err := pki.LoadPublicKey(dir, "nobody"); return err }},
		{name: "TLS key is not a signing key", load: func() error {
			copyFile(t, filepath.Join(dir, "kernel.key"), filepath.Join(dir, "ecdsa.sign.key"))
			_, err := pki.LoadSigningKey(dir, "ecdsa")
			return err
		}},
		{name: "certificate is not a public key", load: func() error {
			copyFile(t, filepath.Join(dir, "kernel.pem"), filepath.Join(dir, "cert.sign.pub"))
			_, err := pki.LoadPublicKey(dir, "cert")
			return err
		}},
		{name: "server TLS for a missing identity", load: func() error { _, err := pki.ServerTLS(dir, "nobody"); return err }},
		{name: "client TLS for a missing identity", load: func() error { _, err := pki.ClientTLS(dir, "nobody", pki.Expect{Role: pki.RoleKernel}); return err }},
		{name: "client TLS without an expected role", load: func() error { _, err := pki.ClientTLS(dir, "kernel", pki.Expect{}); return err }},
		{name: "another identity's private key is not in the folder", load: func() error { _, err := pki.LoadSigningKey(dir, "agent"); return err }},
		{name: "the CA key is not in the folder", load: func() error {
			_, err := os.Stat(filepath.Join(dir, "ca.key"))
			return err
		}},
		{name: "client TLS without a CA", load: func() error {
			noCA := pki.IdentityDir(devInit(t), "kernel")
			if err := os.Remove(filepath.Join(noCA, "ca.pem")); err != nil {
				t.Fatal(err)
			}
			_, err := pki.ClientTLS(noCA, "kernel", pki.Expect{Role: pki.RoleKernel})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.load()
			if err == nil {
				t.Fatal("succeeded, want an error")
			}
			t.Logf("error: %v", err)
		})
	}
}
