package cluster

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Process names.
const (
	Kernel   = "kernel"
	Evidence = "evidence"
	Action   = "action"
	Verifier = "verifier"
)

// Options configure a cluster.
type Options struct {
	// BinDir holds ambit-kernel, ambit-evidence, ambit-action and
	// ambit-verifier.
	BinDir string
	// Dir receives the PKI, configurations, databases and logs.
	Dir string
	// Seed, when set, fills the demo sources before the evidence adapter
	// starts: claims and receipts are SQLite files at the given paths.
	Seed func(ctx context.Context, claimsDB, receiptsDB string) error
	// Durability of the kernel's store: "full" (default) or "normal".
	Durability string
	// CapabilityTTL overrides the kernel's default.
	CapabilityTTL time.Duration
	// Env adds environment variables per process, e.g. failpoints.
	Env map[string][]string
	// Tracing writes every process's spans to TracePath(name).
	Tracing bool
}

// Cluster is a running set of the four processes.
type Cluster struct {
	opts Options
	Dir  string
	// PKI is the root of the dev PKI; each process is given only its own
	// folder (pki.IdentityDir) as pki_dir.
	PKI string
	// Databases.
	KernelDB, ClaimsDB, ReceiptsDB, PaymentsDB string
	// Addresses: the kernel's three listeners and the three adapters'.
	KernelAgent, KernelAdapter, KernelGovernance string
	EvidenceAddr, ActionAddr, VerifierAddr       string
	// MetricsAddr and HealthAddr are each process's plain HTTP metrics
	// listener and plaintext gRPC health listener, by process name.
	MetricsAddr, HealthAddr map[string]string

	mu    sync.Mutex
	procs map[string]*proc
	conns []*grpc.ClientConn
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start creates everything and starts the four processes.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c := &Cluster{
		opts:        o,
		Dir:         o.Dir,
		PKI:         filepath.Join(o.Dir, "pki"),
		KernelDB:    filepath.Join(o.Dir, "kernel.db"),
		ClaimsDB:    filepath.Join(o.Dir, "claims.db"),
		ReceiptsDB:  filepath.Join(o.Dir, "receipts.db"),
		PaymentsDB:  filepath.Join(o.Dir, "payments.db"),
		procs:       map[string]*proc{},
		MetricsAddr: map[string]string{},
		HealthAddr:  map[string]string{},
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o700); err != nil {
		return nil, err
	}
	if err := pki.DevInit(c.PKI, pki.DefaultIdentities()); err != nil {
		return nil, fmt.Errorf("dev init: %w", err)
	}
	if o.Seed != nil {
		if err := o.Seed(ctx, c.ClaimsDB, c.ReceiptsDB); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
	}
	if err := c.writeConfigs(); err != nil {
		return nil, err
	}
	for _, name := range []string{Kernel, Evidence, Action, Verifier} {
		if err := c.start(ctx, name); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) configPath(name string) string { return filepath.Join(c.Dir, name+".yaml") }

// TracePath is where a process's spans go when Options.Tracing is set.
func (c *Cluster) TracePath(name string) string {
	return filepath.Join(c.Dir, "logs", name+".traces.jsonl")
}
func (c *Cluster) addrPath(name string) string { return filepath.Join(c.Dir, name+".addr.json") }

// LogPath is where a process's log goes.
func (c *Cluster) LogPath(name string) string { return filepath.Join(c.Dir, "logs", name+".log") }

func (c *Cluster) writeConfigs() error {
	durability := c.opts.Durability
	if durability == "" {
		durability = "full"
	}
	ttl := c.opts.CapabilityTTL
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	kernel := c.common(Kernel)
	kernel["database"] = c.KernelDB
	kernel["durability"] = durability
	kernel["capability_ttl"] = ttl.String()
	kernel["listen"] = map[string]string{"agent": "127.0.0.1:0", "adapter": "127.0.0.1:0", "governance": "127.0.0.1:0"}
	kernel["peers"] = map[string][]string{"evidence": {"evidence"}, "action": {"action"}, "verifier": {"verifier"}}
	kernel["promotion_authorities"] = map[string][]string{
		"SCOPE_TASK":         {"policy-owner"},
		"SCOPE_WORKSPACE":    {"policy-owner"},
		"SCOPE_ORGANISATION": {"policy-owner"},
	}
	if err := config.Write(c.configPath(Kernel), kernel); err != nil {
		return err
	}
	return nil
}

// common returns the keys every process has, for the process (and
// identity) called name: its own PKI folder, metrics and plaintext health
// on free ports, and tracing when asked for.
func (c *Cluster) common(name string) map[string]any {
	m := map[string]any{
		"identity":        name,
		"pki_dir":         pki.IdentityDir(c.PKI, name),
		"log_level":       "info",
		"shutdown_grace":  "5s",
		"reflection":      true,
		"metrics":         "127.0.0.1:0",
		"health_listen":   "127.0.0.1:0",
		"health_interval": "200ms",
	}
	if c.opts.Tracing {
		m["tracing"], m["tracing_file"] = "file", c.TracePath(name)
	}
	return m
}

// sidecar returns a sidecar's keys: the common ones and the kernel's
// adapter listener.
func (c *Cluster) sidecar(name string, own map[string]any) map[string]any {
	m := c.common(name)
	m["listen"], m["kernel"], m["kernel_timeout"] = "127.0.0.1:0", c.KernelAdapter, "3s"
	for k, v := range own {
		m[k] = v
	}
	return m
}

// adapterConfigs are written once the kernel's adapter address is known.
func (c *Cluster) writeAdapterConfigs() error {
	ev := c.sidecar(Evidence, map[string]any{
		"sources": map[string]any{
			"claims_db":      map[string]string{"kind": "claims", "database": c.ClaimsDB, "provenance": "PROVENANCE_TRUSTED"},
			"receipt_upload": map[string]string{"kind": "receipts", "database": c.ReceiptsDB, "provenance": "PROVENANCE_INSTRUCTION_BEARING"},
		},
	})
	act := c.sidecar(Action, map[string]any{
		"kernel_key":        "kernel",
		"payments_database": c.PaymentsDB,
		"claims_database":   c.ClaimsDB,
	})
	ver := c.sidecar(Verifier, map[string]any{
		"kernel_key": "kernel", "action_key": "action",
		"payments_database": c.PaymentsDB,
	})
	for name, cfg := range map[string]any{Evidence: ev, Action: act, Verifier: ver} {
		if err := config.Write(c.configPath(name), cfg); err != nil {
			return err
		}
	}
	return nil
}

var binaries = map[string]string{Kernel: "ambit-kernel", Evidence: "ambit-evidence", Action: "ambit-action", Verifier: "ambit-verifier"}

func (c *Cluster) start(ctx context.Context, name string) error {
	if name != Kernel {
		if err := c.writeAdapterConfigs(); err != nil {
			return err
		}
	}
	_ = os.Remove(c.addrPath(name))
	logf, err := os.OpenFile(c.LogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.opts.BinDir, binaries[name]), "--config", c.configPath(name), "--addr-file", c.addrPath(name))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), c.opts.Env[name]...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs[name] = p
	c.mu.Unlock()

	addrs, err := c.waitAddrs(ctx, name, p)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.MetricsAddr[name], c.HealthAddr[name] = addrs["metrics"], addrs["health"]
	c.mu.Unlock()
	delete(addrs, "metrics")
	delete(addrs, "health")
	switch name {
	case Kernel:
		c.KernelAgent, c.KernelAdapter, c.KernelGovernance = addrs["agent"], addrs["adapter"], addrs["governance"]
	case Evidence:
		c.EvidenceAddr = addrs["grpc"]
	case Action:
		c.ActionAddr = addrs["grpc"]
	case Verifier:
		c.VerifierAddr = addrs["grpc"]
	}
	for _, a := range addrs {
		if err := c.waitHealthy(ctx, a, p, name); err != nil {
			return err
		}
	}
	return nil
}

// roleOf is the role of the process listening on addr.
func (c *Cluster) roleOf(addr string) pki.Role {
	switch addr {
	case c.EvidenceAddr:
		return pki.RoleEvidence
	case c.ActionAddr:
		return pki.RoleAction
	case c.VerifierAddr:
		return pki.RoleVerifier
	}
	return pki.RoleKernel
}

func (c *Cluster) waitAddrs(ctx context.Context, name string, p *proc) (map[string]string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited during start-up (%v); see %s", name, p.err, c.LogPath(name))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		data, err := os.ReadFile(c.addrPath(name))
		if err != nil {
			continue
		}
		var addrs map[string]string
		if err := json.Unmarshal(data, &addrs); err == nil && len(addrs) > 0 {
			return addrs, nil
		}
	}
	return nil, fmt.Errorf("%s did not report its addresses within 30s; see %s", name, c.LogPath(name))
}

func (c *Cluster) waitHealthy(ctx context.Context, addr string, p *proc, name string) error {
	conn, err := c.dial(ctx, addr, "agent")
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v); see %s", name, p.err, c.LogPath(name))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s at %s not healthy within 15s: %v", name, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dial connects as identity to addr, requiring the role of the process
// that listens there.
func (c *Cluster) dial(ctx context.Context, addr, identity string) (*grpc.ClientConn, error) {
	tlsCfg, err := pki.ClientTLS(pki.IdentityDir(c.PKI, identity), identity, pki.Expect{Role: c.roleOf(addr)})
	if err != nil {
		return nil, err
	}
	return serve.Dial(ctx, addr, tlsCfg)
}

// Conn returns a client connection to addr authenticated as identity; the
// cluster closes it on Stop.
func (c *Cluster) Conn(ctx context.Context, addr, identity string) (*grpc.ClientConn, error) {
	conn, err := c.dial(ctx, addr, identity)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.conns = append(c.conns, conn)
	c.mu.Unlock()
	return conn, nil
}

// Keys returns the public signing keys of every process, for checking
// receipts.
func (c *Cluster) Keys() (envelope.Keyring, error) {
	ring := envelope.Keyring{}
	for _, name := range []string{Kernel, Evidence, Action, Verifier} {
		// The agent's folder holds the public key of every signer.
		pub, err := pki.LoadPublicKey(pki.IdentityDir(c.PKI, "agent"), name)
		if err != nil {
			return nil, err
		}
		ring[name] = ed25519.PublicKey(pub)
	}
	return ring, nil
}

// Kill sends SIGKILL to a process and waits for it to die.
func (c *Cluster) Kill(name string) {
	c.mu.Lock()
	p := c.procs[name]
	c.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits for a process to exit on its own (e.g. at a failpoint).
func (c *Cluster) Wait(ctx context.Context, name string) error {
	c.mu.Lock()
	p := c.procs[name]
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Restart starts a stopped or killed process again, with env replacing
// its extra environment.
func (c *Cluster) Restart(ctx context.Context, name string, env []string) error {
	c.Kill(name)
	if c.opts.Env == nil {
		c.opts.Env = map[string][]string{}
	}
	c.opts.Env[name] = env
	return c.start(ctx, name)
}

// Stop sends SIGTERM to every process, waits up to ten seconds each for a
// graceful exit, then kills what is left. It reports processes that did not
// exit cleanly.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for _, conn := range conns {
		_ = conn.Close()
	}
	var errs []error
	for _, name := range []string{Verifier, Action, Evidence, Kernel} {
		c.mu.Lock()
		p := c.procs[name]
		delete(c.procs, name)
		c.mu.Unlock()
		if p == nil {
			continue
		}
		select {
		case <-p.done:
			continue // already gone (killed by a test)
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			if p.err != nil {
				errs = append(errs, fmt.Errorf("%s exited with %v after SIGTERM; see %s", name, p.err, c.LogPath(name)))
			}
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
			errs = append(errs, fmt.Errorf("%s did not stop within 10s of SIGTERM", name))
		}
	}
	return errors.Join(errs...)
}
