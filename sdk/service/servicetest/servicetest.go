// Package servicetest runs a service binary's program in a test the way the
// integration tests run the binary: on a free loopback port, found through
// its address file, over mutual TLS, and stopped by cancelling its context.
//
// [PKI] writes a development PKI and [WriteFile] a configuration file;
// [Start] runs a service's Run and waits for its address; [Running.Stop]
// stops it and returns Run's error; [Call] makes one call to it as a PKI
// identity, and [CallAll] one per expected [Answer]; [DeadAddr] is an
// address nothing listens on, e.g. a kernel that is down.
package servicetest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Wait bounds every wait, so that a broken service fails the test instead
// of hanging it; nothing asserts on how fast anything is.
const Wait = 15 * time.Second

// PKI writes a development PKI with the default identities
// (pki.DefaultIdentities) into a temporary directory and returns its root;
// identity name's folder, its pki_dir, is pki.IdentityDir(root, name).
func PKI(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	if err := pki.DevInit(dir, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteFile writes body to a file called name in a temporary directory,
// e.g. a configuration file, and returns its path.
func WriteFile(t testing.TB, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// DeadAddr returns a loopback address nothing listens on.
func DeadAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// Running is a service started by [Start].
type Running struct {
	// Addr is the bound address of its listener.
	Addr string
	// Addrs are every bound address by listener name, as in the address
	// file (the metrics and health listeners too, when configured).
	Addrs map[string]string

	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Start runs run, a service's Run, with args followed by --addr-file in a
// goroutine, and returns once the address file names its listener's
// address. It fails t when Run ends first or no address appears in time.
// The service is stopped at the end of the test if [Running.Stop] was not
// called; call Stop before checking for leaked goroutines.
func Start(t testing.TB, run func(context.Context, []string, io.Writer) error, args ...string) *Running {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "service.addr")
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{t: t, cancel: cancel, done: make(chan error, 1)}
	args = append(append([]string(nil), args...), "--addr-file", addrFile)
	go func() { r.done <- run(ctx, args, io.Discard) }()
	t.Cleanup(func() { _ = r.Stop() })
	for deadline := time.Now().Add(Wait); ; time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(addrFile); err == nil {
			var addrs map[string]string
			if err := json.Unmarshal(data, &addrs); err != nil {
				t.Fatal(err)
			}
			r.Addr, r.Addrs = addrs[service.ListenerName], addrs
			return r
		}
		select {
		case err := <-r.done:
			r.once.Do(func() { r.cancel(); r.err = err })
			t.Fatalf("Run ended before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no address file")
		}
	}
}

// Stop cancels the service's context and returns Run's error (nil after a
// clean shutdown). It fails t when Run does not return in time. Calling it
// again returns the same error.
func (r *Running) Stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(Wait):
			r.t.Error("Run did not stop")
		}
	})
	return r.err
}

// Call connects to addr as the TLS identity name of the PKI under root,
// requiring the server's role, and returns what call returns; call's
// context ends after [Wait]. The connection is closed before Call returns.
func Call(t testing.TB, root, name string, server pki.Role, addr string, call func(context.Context, *grpc.ClientConn) error) error {
	t.Helper()
	tlsCfg, err := pki.ClientTLS(pki.IdentityDir(root, name), name, pki.Expect{Role: server})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	conn, err := serve.Dial(ctx, addr, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	return call(ctx, conn)
}

// Answer is the status a call made as Identity must end with: Code and,
// unless Code is OK, Message.
type Answer struct {
	Identity string
	Code     codes.Code
	Message  string
}

// CallAll makes one call to addr (whose server must carry role server) per
// answer, as the answer's identity (see [Call]), and reports every status
// that differs from the answer; every answer is checked, not just up to
// the first difference.
func CallAll(t testing.TB, root string, server pki.Role, addr string, answers []Answer, call func(ctx context.Context, conn *grpc.ClientConn, identity string) error) {
	t.Helper()
	for _, a := range answers {
		st := status.Convert(Call(t, root, a.Identity, server, addr, func(ctx context.Context, conn *grpc.ClientConn) error {
			return call(ctx, conn, a.Identity)
		}))
		if st.Code() != a.Code || (a.Code != codes.OK && st.Message() != a.Message) {
			t.Errorf("call as %s = %v %q, want %v %q", a.Identity, st.Code(), st.Message(), a.Code, a.Message)
		}
	}
}
