package devstack

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// The stack's four processes, by name: each runs as the identity of the
// same name.
const (
	Kernel   = "kernel"
	Evidence = "evidence"
	Action   = "action"
	Verifier = "verifier"
)

// KernelReplica is the process name of the stack's i-th kernel replica
// (from 1): kernel, kernel-2, kernel-3, … Every replica runs as the
// kernel's identity.
func KernelReplica(i int) string {
	if i <= 1 {
		return Kernel
	}
	return Kernel + "-" + strconv.Itoa(i)
}

// binaries are the programs of the processes, by kind, in the bin folder.
var binaries = map[string]string{Kernel: "ambit-kernel", Evidence: "ambit-evidence", Action: "ambit-action", Verifier: "ambit-verifier", MCP: "ambit-mcp"}

// The governance identities of the stack's PKI.
const (
	// Governance decides approvals; it holds no promotion authority.
	Governance = "governance"
	// PolicyOwner may also promote canon items, at every scope.
	PolicyOwner = "policy-owner"
)

// AgentName is the name of the stack's i-th agent identity (from 1):
// agent, agent-2, agent-3, …
func AgentName(i int) string {
	if i <= 1 {
		return "agent"
	}
	return "agent-" + strconv.Itoa(i)
}

// Waits bound every start-up step, so that a broken process fails the
// start instead of hanging it.
const (
	startWait = 30 * time.Second
	stopWait  = 10 * time.Second
	pollEvery = 20 * time.Millisecond
	// A process that outlives stopWait gets quitWait to write its
	// goroutines' stacks; the error shows the last quitLines of its log.
	quitWait  = 3 * time.Second
	quitLines = 400
)

// Options configure a stack.
type Options struct {
	// Dir receives the PKI (pki/), the data folder (data/), every
	// process's configuration, address file and log (logs/), the kernel's
	// database and stack.json. It is created if missing; what it holds
	// from an earlier run is kept.
	Dir string
	// BinDir holds ambit-kernel, ambit-evidence, ambit-action and
	// ambit-verifier, and every program the examples' commands name.
	BinDir string
	// Examples are the examples to enable: manifests (example.yaml) or
	// the folders holding them. At least one: the adapters serve only
	// what examples declare.
	Examples []string
	// Agents is how many agent identities the PKI gets (default 1).
	Agents int
	// Sidecars is the topology: SharedSidecars (the default) or
	// PerAgentSidecars, where each agent gets its own evidence adapter,
	// action adapter, verifier and MCP gateway.
	Sidecars Topology
	// Purpose is the purpose the agents' gateways read and propose under
	// (per-agent topology only; default: binding.purpose of the first
	// example's contract template).
	Purpose string
	// Durability of the kernel's store and the action adapters'
	// databases: "full" (default) or "normal".
	Durability string
	// CapabilityTTL is the kernel's (default 5m).
	CapabilityTTL time.Duration
	// WatchInterval, when set, is how often the evidence adapter reads
	// watched records again (unset: the adapter's default).
	WatchInterval time.Duration
	// LogLevel of the four processes (default info).
	LogLevel string
	// Env adds environment variables per process, e.g. failpoints.
	Env map[string][]string
	// Tracing writes every process's spans to TracePath(name).
	Tracing bool
	// Database is the kernel's: an SQLite file (default DIR/kernel.db) or
	// a postgres:// URL.
	Database string
	// KernelReplicas is how many kernels share Database (default 1; more
	// need PostgreSQL). The sidecars and agents dial all of them.
	KernelReplicas int
}

// Stack is a running set of the four processes and the examples' servers.
// Its methods are safe for concurrent use.
type Stack struct {
	// Info is what stack.json holds: the addresses, the PKI, the agents
	// and each example's placeholder values. Addresses do not change: a
	// restarted process binds the ones it had.
	Info
	// Dir is the stack's folder, DataDir its data folder (${DATA}) and
	// KernelDB the kernel's database (a path or a URL).
	Dir, DataDir, KernelDB string
	// Examples are the enabled examples, in the order given.
	Examples []*Example

	opts     Options
	sections *sections
	// members are the stack's own processes, in start order.
	members []member
	died    chan string

	mu    sync.Mutex
	procs map[string]*proc
	// bound are the addresses each process bound, by listener name.
	bound map[string]map[string]string
	conns []*grpc.ClientConn
}

// Start creates what the stack needs and starts it: the PKI (the four
// processes, the governance identities and the agents), the data folder,
// each example's setup commands and servers, then the kernel, the evidence
// adapter, the action adapter and the verifier, each on free loopback
// ports and each waited for until it is SERVING. It writes stack.json
// last. On error, whatever was started is stopped.
func Start(ctx context.Context, o Options) (*Stack, error) {
	s, err := newStack(o)
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

func newStack(o Options) (*Stack, error) {
	if o.Dir == "" || o.BinDir == "" {
		return nil, errors.New("devstack: Dir and BinDir are required")
	}
	if len(o.Examples) == 0 {
		return nil, errors.New("devstack: at least one example is required: the adapters serve only what examples declare")
	}
	var err error
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return nil, fmt.Errorf("devstack: %w", err)
	}
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return nil, fmt.Errorf("devstack: %w", err)
	}
	if o.Agents <= 0 {
		o.Agents = 1
	}
	switch o.Sidecars {
	case "":
		o.Sidecars = SharedSidecars
	case SharedSidecars, PerAgentSidecars:
	default:
		return nil, fmt.Errorf("devstack: sidecars must be %q or %q, got %q", SharedSidecars, PerAgentSidecars, o.Sidecars)
	}
	if o.Durability == "" {
		o.Durability = DefaultDurability
	}
	if o.CapabilityTTL <= 0 {
		o.CapabilityTTL = DefaultCapabilityTTL
	}
	if o.LogLevel == "" {
		o.LogLevel = DefaultLogLevel
	}
	if o.Database == "" {
		o.Database = filepath.Join(o.Dir, "kernel.db")
	}
	if o.KernelReplicas <= 0 {
		o.KernelReplicas = 1
	}
	if o.KernelReplicas > 1 && !sqldb.IsPostgres(o.Database) {
		return nil, errors.New("devstack: kernel replicas share one database: give a postgres:// Database")
	}
	s := &Stack{
		Dir: o.Dir, DataDir: filepath.Join(o.Dir, "data"), KernelDB: o.Database,
		opts: o, sections: newSections(), died: make(chan string, 16),
		procs: map[string]*proc{}, bound: map[string]map[string]string{},
	}
	s.PKI = filepath.Join(o.Dir, "pki")
	s.Governance = []string{Governance, PolicyOwner}
	for i := 1; i <= o.Agents; i++ {
		s.Agents = append(s.Agents, AgentName(i))
	}
	s.Info.Examples = map[string]map[string]string{}
	s.Processes = map[string]ProcessInfo{}
	var errs []error
	for _, path := range o.Examples {
		e, err := LoadExample(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if slices.ContainsFunc(s.Examples, func(other *Example) bool { return other.Name == e.Name }) {
			errs = append(errs, fmt.Errorf("example %s is given twice", e.Name))
			continue
		}
		for _, srv := range e.Servers {
			for _, other := range s.Examples {
				if slices.ContainsFunc(other.Servers, func(x Server) bool { return x.Name == srv.Name }) {
					errs = append(errs, fmt.Errorf("example %s: server %s is also a server of example %s", e.Name, srv.Name, other.Name))
				}
			}
		}
		s.Examples = append(s.Examples, e)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("devstack: %w", err)
	}
	s.members = members(o.Sidecars, s.Agents, o.KernelReplicas)
	for _, e := range s.Examples {
		for _, srv := range e.Servers {
			if _, ok := s.member(srv.Name); ok {
				return nil, fmt.Errorf("devstack: example %s: server %s has the name of one of the stack's processes", e.Name, srv.Name)
			}
		}
	}
	if o.Sidecars == PerAgentSidecars {
		if s.opts.Purpose == "" {
			if s.opts.Purpose, err = contractPurpose(s.Examples[0]); err != nil {
				return nil, fmt.Errorf("devstack: the gateways' purpose (give one): %w", err)
			}
		}
		s.Sidecars = map[string]AgentSidecars{}
		for _, a := range s.Agents {
			ids := map[string]string{}
			for _, kind := range []string{Evidence, Action, Verifier, MCP} {
				ids[kind] = SidecarName(kind, a)
			}
			ids[MCP] = a
			s.Sidecars[a] = AgentSidecars{Task: TaskName(a), Identities: ids}
		}
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context) error {
	for _, d := range []string{s.Dir, s.DataDir, s.logDir(), s.runDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("devstack: %w", err)
		}
	}
	// A stack.json left by an earlier run describes processes that are
	// gone; whoever waits for the file must not read it.
	if err := os.Remove(s.InfoPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("devstack: %w", err)
	}
	var ids []pki.Identity
	for _, m := range s.members {
		// A gateway acts as its agent; kernel replicas share one identity.
		if m.kind != MCP && (m.kind != Kernel || m.name == Kernel) {
			ids = append(ids, pki.Identity{Name: m.identity, Role: roles[m.kind]})
		}
	}
	ids = append(ids, pki.Identity{Name: Governance, Role: pki.RoleGovernance}, pki.Identity{Name: PolicyOwner, Role: pki.RoleGovernance})
	for _, a := range s.Agents {
		ids = append(ids, pki.Identity{Name: a, Role: pki.RoleAgent})
	}
	if err := pki.DevInit(s.PKI, ids); err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	for _, e := range s.Examples {
		vars, err := s.startExample(ctx, e)
		if err != nil {
			return err
		}
		s.Info.Examples[e.Name] = vars
		if err := s.sections.add(e, vars); err != nil {
			return fmt.Errorf("devstack: %w", err)
		}
	}
	for _, m := range s.members {
		if err := s.startProcess(ctx, m.name); err != nil {
			return err
		}
	}
	return s.writeInfo()
}

// startExample runs an example's setup commands and starts its servers,
// and returns the values of its files' placeholders.
func (s *Stack) startExample(ctx context.Context, e *Example) (map[string]string, error) {
	vars := map[string]string{VarData: s.DataDir, VarDir: s.Dir}
	for i, c := range e.Setup {
		argv, err := s.command(c, vars)
		if err != nil {
			return nil, fmt.Errorf("devstack: example %s: setup[%d]: %w", e.Name, i, err)
		}
		if err := s.run(ctx, e.Name+".setup", argv); err != nil {
			return nil, fmt.Errorf("devstack: example %s: setup[%d]: %w", e.Name, i, err)
		}
	}
	for _, srv := range e.Servers {
		addrFile := s.addrPath(srv.Name)
		_ = os.Remove(addrFile)
		argv, err := s.command(srv.Command, map[string]string{VarData: s.DataDir, VarDir: s.Dir, VarAddrFile: addrFile})
		if err != nil {
			return nil, fmt.Errorf("devstack: example %s: server %s: %w", e.Name, srv.Name, err)
		}
		p, err := s.spawn(srv.Name, argv, nil)
		if err != nil {
			return nil, err
		}
		addrs, err := s.waitAddrs(ctx, srv.Name, p)
		if err != nil {
			return nil, err
		}
		for v, key := range srv.Addresses {
			if addrs[key] == "" {
				return nil, fmt.Errorf("devstack: server %s wrote no %q to its address file (it wrote %v)", srv.Name, key, addrs)
			}
			vars[v] = addrs[key]
		}
		s.setProcessInfo(srv.Name, p, "")
	}
	return vars, nil
}

// command expands a command's placeholders and finds its program in the
// bin folder.
func (s *Stack) command(c []string, vars map[string]string) ([]string, error) {
	argv := []string{filepath.Join(s.opts.BinDir, c[0])}
	if _, err := os.Stat(argv[0]); err != nil {
		return nil, fmt.Errorf("program %s: %w", c[0], err)
	}
	for _, a := range c[1:] {
		v, err := expand(a, vars)
		if err != nil {
			return nil, err
		}
		argv = append(argv, v)
	}
	return argv, nil
}

// startProcess writes one of the stack's processes' configuration, starts
// it and waits until every gRPC listener it reports is SERVING.
func (s *Stack) startProcess(ctx context.Context, name string) error {
	m, ok := s.member(name)
	if !ok {
		return fmt.Errorf("devstack: no process %s", name)
	}
	if err := s.writeConfig(m); err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	_ = os.Remove(s.addrPath(name))
	argv := []string{filepath.Join(s.opts.BinDir, binaries[m.kind]), "--config", s.ConfigPath(name), "--addr-file", s.addrPath(name)}
	s.mu.Lock()
	env := s.opts.Env[name]
	s.mu.Unlock()
	p, err := s.spawn(name, argv, env)
	if err != nil {
		return err
	}
	addrs, err := s.waitAddrs(ctx, name, p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.bound[name] = addrs
	s.noteAddrs(m, addrs)
	s.mu.Unlock()
	s.setProcessInfo(name, p, s.ConfigPath(name))
	for listener, addr := range addrs {
		if listener == "metrics" || listener == "health" || listener == MCP {
			// Plain HTTP and plaintext health: the TLS listeners say more.
			// The gateway's endpoint is up once its address is written.
			continue
		}
		if err := s.waitServing(ctx, name, addr, p); err != nil {
			return err
		}
	}
	return nil
}

// Paths of the stack's files.
func (s *Stack) logDir() string { return filepath.Join(s.Dir, "logs") }
func (s *Stack) runDir() string { return filepath.Join(s.Dir, "run") }
func (s *Stack) addrPath(name string) string {
	return filepath.Join(s.runDir(), name+".addr.json")
}

// InfoPath is where stack.json is written once the stack is up.
func (s *Stack) InfoPath() string { return filepath.Join(s.Dir, InfoFile) }

// ConfigPath is the configuration file of one of the stack's processes
// (DIR/kernel.yaml, DIR/evidence.yaml…; DIR/evidence-agent-2.yaml in the
// per-agent topology).
func (s *Stack) ConfigPath(name string) string { return filepath.Join(s.Dir, name+".yaml") }

// LogPath is where a process's output goes (a server's too; setup
// commands write to <example>.setup.log).
func (s *Stack) LogPath(name string) string { return filepath.Join(s.logDir(), name+".log") }

// TracePath is where a process's spans go when Options.Tracing is set.
func (s *Stack) TracePath(name string) string {
	return filepath.Join(s.logDir(), name+".traces.jsonl")
}

// Example returns an enabled example by name.
func (s *Stack) Example(name string) (*Example, bool) {
	i := slices.IndexFunc(s.Examples, func(e *Example) bool { return e.Name == name })
	if i < 0 {
		return nil, false
	}
	return s.Examples[i], true
}

// Addr returns one of the stack's processes' addresses for a listener
// ("grpc" for a sidecar; "agent", "adapter" or "governance" for the
// kernel; "mcp", the endpoint's URL, for a gateway; "metrics" and "health"
// for any).
func (s *Stack) Addr(name, listener string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound[name][listener]
}

// noteAddrs keeps where a process listens in Info; the caller holds s.mu.
// The first agent's sidecars are also the top-level addresses, so that a
// client of the shared topology works in the per-agent one as that agent.
func (s *Stack) noteAddrs(m member, addrs map[string]string) {
	first := m.agent == "" || m.agent == s.Agents[0]
	own := s.Sidecars[m.agent]
	switch m.kind {
	case Kernel:
		k := KernelAddrs{Agent: addrs["agent"], Adapter: addrs["adapter"], Governance: addrs["governance"]}
		if m.name == Kernel {
			s.Kernel = k
		}
		if s.opts.KernelReplicas > 1 {
			i := slices.IndexFunc(s.members, func(o member) bool { return o.name == m.name })
			if len(s.Info.KernelReplicas) <= i {
				s.Info.KernelReplicas = append(s.Info.KernelReplicas, make([]KernelAddrs, i+1-len(s.Info.KernelReplicas))...)
			}
			s.Info.KernelReplicas[i] = k
		}
	case Evidence:
		own.Evidence = addrs["grpc"]
		if first {
			s.Info.Evidence = addrs["grpc"]
		}
	case Action:
		own.Action = addrs["grpc"]
		if first {
			s.Info.Action = addrs["grpc"]
		}
	case Verifier:
		own.Verifier = addrs["grpc"]
		if first {
			s.Info.Verifier = addrs["grpc"]
		}
	case MCP:
		own.MCP = addrs[MCP]
	}
	if m.agent != "" {
		s.Sidecars[m.agent] = own
	}
}

// roleOf is the role of the process listening on addr.
func (s *Stack) roleOf(addr string) pki.Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.members {
		if m.kind != Kernel && m.kind != MCP && s.bound[m.name]["grpc"] == addr {
			return roles[m.kind]
		}
	}
	return pki.RoleKernel
}

func (s *Stack) dial(ctx context.Context, addr, identity string) (*grpc.ClientConn, error) {
	tlsCfg, err := pki.ClientTLS(pki.IdentityDir(s.PKI, identity), identity, pki.Expect{Role: s.roleOf(addr)})
	if err != nil {
		return nil, err
	}
	return serve.Dial(ctx, addr, tlsCfg)
}

// Conn returns a client connection to one of the four processes' TLS
// listeners (addr), authenticated as identity and requiring the role of
// the process that listens there. The stack closes it on Stop.
func (s *Stack) Conn(ctx context.Context, addr, identity string) (*grpc.ClientConn, error) {
	conn, err := s.dial(ctx, addr, identity)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.conns = append(s.conns, conn)
	s.mu.Unlock()
	return conn, nil
}

// Agent connects as an agent identity to the kernel's agent listener and
// the three sidecars that serve it (its own in the per-agent topology);
// the caller closes it.
func (s *Stack) Agent(ctx context.Context, identity string) (*client.Agent, error) {
	return s.AgentVia(ctx, identity, identity)
}

// kernels is one listener of every kernel replica, as one address list.
func (s *Stack) kernels(listener func(KernelAddrs) string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.Info.KernelReplicas) == 0 {
		return listener(s.Kernel)
	}
	addrs := make([]string, len(s.Info.KernelReplicas))
	for i, k := range s.Info.KernelReplicas {
		addrs[i] = listener(k)
	}
	return strings.Join(addrs, ",")
}

// CheckpointDir is where a kernel replica writes its checkpoints.
func (s *Stack) CheckpointDir(name string) string {
	if name == Kernel && !sqldb.IsPostgres(s.KernelDB) {
		return s.KernelDB + ".checkpoints" // the kernel's default
	}
	return filepath.Join(s.Dir, name+".checkpoints")
}

// AgentVia connects as an agent identity to the kernel's agent listener
// and the sidecars that serve another agent, via: in the per-agent
// topology, what one agent could try with another's sidecars.
func (s *Stack) AgentVia(ctx context.Context, identity, via string) (*client.Agent, error) {
	addrs := client.Addresses{Kernel: s.kernels(func(k KernelAddrs) string { return k.Agent }), Evidence: s.Info.Evidence, Action: s.Info.Action, Verifier: s.Info.Verifier}
	s.mu.Lock()
	if own, ok := s.Sidecars[via]; ok {
		addrs.Evidence, addrs.Action, addrs.Verifier = own.Evidence, own.Action, own.Verifier
	}
	s.mu.Unlock()
	return client.Dial(ctx, pki.IdentityDir(s.PKI, identity), identity, addrs)
}

// Keys returns the public signing keys of the kernel and every sidecar,
// for checking receipts, as an agent's key folder holds them.
func (s *Stack) Keys() (envelope.Keyring, error) {
	ring := envelope.Keyring{}
	for _, m := range s.members {
		if m.kind == MCP {
			continue // the gateway signs nothing
		}
		pub, err := pki.LoadPublicKey(pki.IdentityDir(s.PKI, s.Agents[0]), m.identity)
		if err != nil {
			return nil, err
		}
		ring[m.identity] = ed25519.PublicKey(pub)
	}
	return ring, nil
}
