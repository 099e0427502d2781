package pki_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
)

// check calls the health service at addr with client and returns the
// call's error.
func check(t *testing.T, addr string, client *tls.Config) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(client)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// TestClientChecksServerRole pins the review finding: an evidence adapter
// pointed at a process holding the agent's certificate trusted it as its
// kernel. A client names the role it expects, and a server with another
// role fails the handshake.
func TestClientChecksServerRole(t *testing.T) {
	root := devInit(t)
	serve := func(name string) string {
		cfg, err := pki.ServerTLS(pki.IdentityDir(root, name), name)
		if err != nil {
			t.Fatal(err)
		}
		addr, _ := startHealthServer(t, cfg)
		return addr
	}
	impostor, kernel := serve("agent"), serve("kernel")
	tests := []struct {
		name   string
		addr   string
		expect pki.Expect
		want   string // empty: the call succeeds; else a substring of the error
	}{
		{name: "kernel expected, kernel found", addr: kernel, expect: pki.Expect{Role: pki.RoleKernel}},
		{name: "kernel expected, agent found", addr: impostor, expect: pki.Expect{Role: pki.RoleKernel}, want: `has role agent, want kernel`},
		{name: "agent expected, agent found", addr: impostor, expect: pki.Expect{Role: pki.RoleAgent}},
		{name: "server name configured", addr: kernel, expect: pki.Expect{Role: pki.RoleKernel, ServerName: "kernel"}},
		{name: "server name the certificate does not carry", addr: kernel, expect: pki.Expect{Role: pki.RoleKernel, ServerName: "kernel.example"},
			want: "kernel.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := pki.ClientTLS(pki.IdentityDir(root, "evidence"), "evidence", tt.expect)
			if err != nil {
				t.Fatal(err)
			}
			err = check(t, tt.addr, client)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want a failed handshake naming %q", err, tt.want)
			}
		})
	}
}

func TestLoadLocalRole(t *testing.T) {
	root := devInit(t)
	l, err := pki.LoadLocal(pki.IdentityDir(root, "kernel"), "kernel", pki.RoleKernel)
	if err != nil {
		t.Fatal(err)
	}
	if l.Identity != (pki.Identity{Name: "kernel", Role: pki.RoleKernel}) {
		t.Errorf("Identity = %+v", l.Identity)
	}
	// A process started as the kernel with the agent's folder refuses.
	_, err = pki.LoadLocal(pki.IdentityDir(root, "agent"), "agent", pki.RoleKernel)
	if !errors.Is(err, pki.ErrWrongRole) || !strings.Contains(err.Error(), "has role agent, want kernel") {
		t.Errorf("LoadLocal(agent as kernel) = %v, want ErrWrongRole", err)
	}
	// A folder whose certificate names another identity is refused too.
	mixed := t.TempDir()
	for _, f := range []string{"ca.pem", "agent.pem", "agent.key"} {
		copyFile(t, filepath.Join(pki.IdentityDir(root, "agent"), f), filepath.Join(mixed, strings.Replace(f, "agent", "kernel", 1)))
	}
	if _, err := pki.LoadLocal(mixed, "kernel", ""); err == nil || !strings.Contains(err.Error(), `certificate of "agent"`) {
		t.Errorf("LoadLocal(agent's certificate named kernel) = %v", err)
	}
}

// serverSerial returns the serial of the certificate the server at addr
// presents.
func serverSerial(t *testing.T, addr string, client *tls.Config) *big.Int {
	t.Helper()
	var serial *big.Int
	c := client.Clone()
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		serial = cs.PeerCertificates[0].SerialNumber
		return nil
	}
	if err := check(t, addr, c); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return serial
}

// TestCertificateReload renews the server's certificate on disk while it
// serves: the next handshake presents the new one, without a restart. A
// replacement for another role is not taken.
func TestCertificateReload(t *testing.T) {
	root := devInit(t)
	dir := pki.IdentityDir(root, "kernel")
	local, err := pki.LoadLocal(dir, "kernel", pki.RoleKernel)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reloads []string
	local.OnReload = func(cert *x509.Certificate, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			reloads = append(reloads, "error: "+err.Error())
			return
		}
		reloads = append(reloads, "serial "+cert.SerialNumber.String())
	}
	addr, _ := startHealthServer(t, local.ServerTLS())
	client, err := pki.ClientTLS(pki.IdentityDir(root, "agent"), "agent", pki.Expect{Role: pki.RoleKernel})
	if err != nil {
		t.Fatal(err)
	}
	first := serverSerial(t, addr, client)
	if again := serverSerial(t, addr, client); again.Cmp(first) != 0 {
		t.Fatalf("serial changed without a renewal: %v then %v", first, again)
	}

	// Renew: remove the pair and let DevInit issue a new one.
	for _, f := range []string{"kernel.pem", "kernel.key"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pki.DevInit(root, []pki.Identity{{Name: "kernel", Role: pki.RoleKernel}}); err != nil {
		t.Fatal(err)
	}
	renewed := serverSerial(t, addr, client)
	if renewed.Cmp(first) == 0 {
		t.Fatal("the server still presents the old certificate after renewal")
	}

	// Another role's certificate in the kernel's files is refused; the
	// renewed certificate stays.
	agentDir := pki.IdentityDir(root, "agent")
	copyFile(t, filepath.Join(agentDir, "agent.pem"), filepath.Join(dir, "kernel.pem"))
	copyFile(t, filepath.Join(agentDir, "agent.key"), filepath.Join(dir, "kernel.key"))
	if got := serverSerial(t, addr, client); got.Cmp(renewed) != 0 {
		t.Errorf("serial after a bad replacement = %v, want the renewed %v", got, renewed)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reloads) != 2 || reloads[0] != "serial "+renewed.String() || !strings.Contains(reloads[1], `certificate of "agent"`) {
		t.Errorf("OnReload calls = %q", reloads)
	}
}
