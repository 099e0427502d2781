package e2e_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/suite"
	"google.golang.org/protobuf/encoding/protojson"
)

// opaVerdict is an OPA answer, or the evaluator's, reduced to what the
// benchmark compares.
type opaVerdict struct {
	Outcome string   `json:"outcome"`
	Reasons []string `json:"reasons"`
}

// seedRequests are the seed suite's 140 episodes as OPA query bodies, and
// the evaluator's verdict on each under coupled-strict, the contract the
// Rego policy transcribes.
func seedRequests(tb testing.TB) ([][]byte, []opaVerdict) {
	tb.Helper()
	eps, err := suite.Load(suite.Seed)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := contract.Profile("coupled-strict")
	if err != nil {
		tb.Fatal(err)
	}
	cc, err := contract.Compile(c)
	if err != nil {
		tb.Fatal(err)
	}
	now := c.GetBinding().GetValidUntil().AsTime().Add(-time.Hour)
	marshal := protojson.MarshalOptions{UseProtoNames: true}
	var bodies [][]byte
	var want []opaVerdict
	for _, e := range eps {
		facts, err := marshal.Marshal(e.ProtoFacts())
		if err != nil {
			tb.Fatal(err)
		}
		bodies = append(bodies, []byte(`{"input":`+string(facts)+`}`))
		var d evaluate.Decision
		if err := evaluate.Evaluate(e.EvalFacts(), cc.Eval, now, &d); err != nil {
			tb.Fatal(err)
		}
		v := opaVerdict{Outcome: d.Outcome.String()}
		for _, r := range d.Reasons {
			v.Reasons = append(v.Reasons, r.Code.String())
		}
		slices.Sort(v.Reasons)
		want = append(want, v)
	}
	return bodies, want
}

// opaServer is an OPA server on a loopback port with mutual TLS, serving
// e2e/testdata/seed.rego.
type opaServer struct {
	url    string
	client *http.Client
}

// startOPA runs bin as `opa run --server` with a fresh CA, a server
// certificate and a client certificate the server requires, and stops it in
// t.Cleanup.
func startOPA(tb testing.TB, bin string) *opaServer {
	tb.Helper()
	dir := tb.TempDir()
	caKey, caCert := newCert(tb, "bench CA", nil, nil)
	srvKey, srvCert := newCert(tb, "127.0.0.1", caKey, caCert)
	cliKey, cliCert := newCert(tb, "bench client", caKey, caCert)
	write := func(name string, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			tb.Fatal(err)
		}
		return der
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	policy, err := filepath.Abs(filepath.Join("testdata", "seed.rego"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--server", "--addr", addr, "--log-level", "error",
		"--tls-cert-file", write("server.pem", "CERTIFICATE", srvCert.Raw),
		"--tls-private-key-file", write("server.key", "EC PRIVATE KEY", keyDER(srvKey)),
		"--tls-ca-cert-file", write("ca.pem", "CERTIFICATE", caCert.Raw),
		"--authentication", "tls", policy)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start opa: %v", err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{{
			Certificate: [][]byte{cliCert.Raw}, PrivateKey: cliKey, Leaf: cliCert}}},
		MaxIdleConnsPerHost: 128,
		ForceAttemptHTTP2:   false,
	}
	tb.Cleanup(tr.CloseIdleConnections)
	o := &opaServer{url: "https://" + addr, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := o.client.Get(o.url + "/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return o
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("opa at %s not healthy: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// decide asks OPA for the seed policy's decision on one query body.
func (o *opaServer) decide(ctx context.Context, body []byte) (opaVerdict, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url+"/v1/data/ambit/seed/decision", bytes.NewReader(body))
	if err != nil {
		return opaVerdict{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return opaVerdict{}, err
	}
	defer resp.Body.Close()
	var out struct {
		Result opaVerdict `json:"result"`
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return opaVerdict{}, fmt.Errorf("opa: %s: %s", resp.Status, msg)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return opaVerdict{}, err
	}
	slices.Sort(out.Result.Reasons)
	return out.Result, nil
}

// newCert makes an ECDSA key and a certificate for name, signed by the
// parent, or self-signed as a CA when parent is nil.
func newCert(tb testing.TB, name string, parentKey *ecdsa.PrivateKey, parent *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return key, cert
}
