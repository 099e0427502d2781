package e2e_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/google/pprof/profile"
)

// cpuPart is one part of a process's CPU time: the samples whose stack
// holds a function match accepts, and that no part before it took.
type cpuPart struct {
	name  string
	match func(fn string) bool
}

func prefixed(ps ...string) func(string) bool {
	return func(fn string) bool {
		for _, p := range ps {
			if strings.HasPrefix(fn, p) {
				return true
			}
		}
		return false
	}
}

// The parts of a process's CPU time, in the order they are checked, so
// that a part nested in another (the disk's system calls in SQLite,
// SQLite in a decision, a sidecar's call to the kernel in its handler) is
// counted as itself.
const (
	partDisk      = "disk: SQLite's reads, writes and syncs (system calls)"
	partSQLite    = "SQLite: statements, b-trees, WAL index, locks"
	partEnvelope  = "records signed, verified and hashed (sdk/envelope)"
	partLog       = "log lines (zap)"
	partGC        = "garbage collection"
	partOutbound  = "calls to other processes (gRPC and HTTP clients)"
	partOwn       = "own work: decision, redemption, adapter and verifier logic"
	partHandling  = "call handling: decoding, interceptors, encoding"
	partTransport = "transport: HTTP/2, TLS, sockets"
	partScheduler = "scheduler: idle Ps looking for work"
)

var cpuParts = []cpuPart{
	{partDisk, func(fn string) bool {
		name, ok := strings.CutPrefix(fn, "modernc.org/libc.X")
		return ok && slices.Contains([]string{"pread", "pwrite", "pread64", "pwrite64", "read", "write", "fsync", "fdatasync"}, name)
	}},
	{partSQLite, prefixed("modernc.org/sqlite", "modernc.org/libc", "database/sql.")},
	{partEnvelope, prefixed("github.com/ambitkernel/ambit/sdk/envelope.")},
	{partLog, prefixed("go.uber.org/zap")},
	{partGC, func(fn string) bool {
		return strings.HasPrefix(fn, "runtime.gc") || strings.HasPrefix(fn, "runtime.bgs") || strings.HasPrefix(fn, "runtime.sweep") ||
			fn == "gcWriteBarrier" || strings.HasPrefix(fn, "runtime.markroot") || strings.HasPrefix(fn, "runtime.scan")
	}},
	{partOutbound, prefixed("google.golang.org/grpc.(*ClientConn).Invoke", "net/http.(*Client)")},
	{partOwn, prefixed("github.com/ambitkernel/ambit/kernel/", "github.com/ambitkernel/ambit/adapters/", "github.com/ambitkernel/ambit/verifier/")},
	{partHandling, prefixed("google.golang.org/grpc.(*Server).processRPC")},
	{partTransport, prefixed("google.golang.org/grpc", "golang.org/x/net/http2", "net/http", "crypto/tls", "net.", "internal/poll", "syscall.", "runtime.netpoll")},
	{partScheduler, prefixed("runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall")},
}

const otherPart = "other (timers, the runtime)"

// cpuSplit is a CPU profile's time by part.
type cpuSplit struct {
	calls int64
	total time.Duration
	parts map[string]time.Duration
}

// perCall is a part's CPU time per call, in microseconds.
func (s cpuSplit) perCall(part string) float64 {
	if s.calls == 0 {
		return 0
	}
	d := s.total
	if part != "" {
		d = s.parts[part]
	}
	return float64(d) / float64(time.Microsecond) / float64(s.calls)
}

// splitCPU sorts a CPU profile's samples into cpuParts.
func splitCPU(p *profile.Profile) (cpuSplit, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return cpuSplit{}, fmt.Errorf("not a CPU profile: %v", p.SampleType)
	}
	s := cpuSplit{parts: map[string]time.Duration{}}
	for _, sample := range p.Sample {
		d := time.Duration(sample.Value[idx])
		s.total += d
		s.parts[partOf(sample)] += d
	}
	return s, nil
}

func partOf(sample *profile.Sample) string {
	for _, part := range cpuParts {
		for _, loc := range sample.Location {
			for _, line := range loc.Line {
				if line.Function != nil && part.match(line.Function.Name) {
					return part.name
				}
			}
		}
	}
	return otherPart
}

// underLoad runs op on conc goroutines, closed loop, and runs measure
// once the load has run for a second (so that it sees the steady state);
// it returns how many calls ended while measure ran.
func underLoad(conc int, op func(i int) error, measure func() error) (int64, error) {
	var counting atomic.Bool
	var calls, next atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := op(int(next.Add(1))); err != nil {
					errs <- err
					return
				}
				if counting.Load() {
					calls.Add(1)
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	time.Sleep(time.Second)
	counting.Store(true)
	err := measure()
	counting.Store(false)
	select {
	case lerr := <-errs:
		return 0, lerr
	default:
	}
	return calls.Load(), err
}

// profileUnder runs op on conc goroutines, closed loop, while each of
// the stack's processes named takes a CPU profile of itself for d (the
// stack's configuration sets profiling), and returns each profile's time
// by part with how many calls ended inside it. keep, unless nil, names a
// file to write a process's profile to.
func profileUnder(ctx context.Context, st *stack, d time.Duration, conc int, op func(i int) error, procs []string, keep func(proc string) string) ([]cpuSplit, error) {
	out := make([]cpuSplit, len(procs))
	calls, err := underLoad(conc, op, func() error {
		perr := make([]error, len(procs))
		var taking sync.WaitGroup
		for i, proc := range procs {
			taking.Go(func() {
				var path string
				if keep != nil {
					path = keep(proc)
				}
				if proc == clientProc {
					out[i], perr[i] = profileSelf(d, path)
					return
				}
				out[i], perr[i] = profileOf(ctx, st.Addr(proc, "metrics"), d, path)
			})
		}
		taking.Wait()
		for i := range perr {
			if perr[i] != nil {
				return fmt.Errorf("%s: %w", procs[i], perr[i])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].calls = calls
	}
	return out, nil
}

// syscallsUnder counts, with strace attached to the process pid, the
// system calls it makes while op runs on conc goroutines for about d, and
// returns them per call, by name. The count covers strace's whole
// attachment, the calls are those that ended meanwhile: a few
// milliseconds of attaching and detaching against seconds.
func syscallsUnder(strace string, pid int, d time.Duration, conc int, op func(i int) error) (map[string]float64, error) {
	out := filepath.Join(os.TempDir(), fmt.Sprintf("ambit-strace-%d-%d", pid, time.Now().UnixNano()))
	defer os.Remove(out)
	var stderr bytes.Buffer
	calls, err := underLoad(conc, op, func() error {
		cmd := exec.Command(strace, "-f", "-qq", "-c", "-o", out, "-p", strconv.Itoa(pid))
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		time.Sleep(d)
		// On SIGINT strace detaches, writes its summary and ends as
		// interrupted: its summary says whether it counted anything.
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return err
		}
		_ = cmd.Wait()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("strace -c -p %d: %w", pid, err)
	}
	if calls == 0 {
		return nil, fmt.Errorf("strace -c -p %d: no call ended while it counted", pid)
	}
	raw, err := os.ReadFile(out)
	var counts map[string]int64
	if err == nil {
		counts, err = parseStraceSummary(string(raw))
	}
	if err != nil {
		return nil, fmt.Errorf("strace -c -p %d: %w %s", pid, err, strings.TrimSpace(stderr.String()))
	}
	per := make(map[string]float64, len(counts))
	for name, n := range counts {
		per[name] = float64(n) / float64(calls)
	}
	return per, nil
}

// parseStraceSummary reads the table strace -c writes: a row per system
// call, its count in the fourth column and its name in the last, then a
// total row.
func parseStraceSummary(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[len(f)-1] == "total" {
			continue
		}
		if _, err := strconv.ParseFloat(f[0], 64); err != nil {
			continue // the header and the rules
		}
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("strace summary row %q: %w", line, err)
		}
		out[f[len(f)-1]] = n
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no system calls in strace's summary %q", s)
	}
	return out, nil
}

// clientProc names, among the processes profileUnder profiles, the
// benchmark's own: the agent making the calls, on the same machine.
const clientProc = "client"

// canProfileSelf reports whether this process can take a CPU profile of
// itself: not while go test -cpuprofile holds the profiler.
func canProfileSelf() bool {
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		return false
	}
	pprof.StopCPUProfile()
	return true
}

// profileSelf takes a CPU profile of this process for d, keeps it at path
// unless empty, and splits it.
func profileSelf(d time.Duration, path string) (cpuSplit, error) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return cpuSplit{}, err
	}
	time.Sleep(d)
	pprof.StopCPUProfile()
	return splitRaw(buf.Bytes(), path)
}

// profileOf takes a CPU profile for d from the process whose metrics
// listener is at addr, keeps it at path unless empty, and splits it.
func profileOf(ctx context.Context, addr string, d time.Duration, path string) (cpuSplit, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())), nil)
	if err != nil {
		return cpuSplit{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return cpuSplit{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cpuSplit{}, fmt.Errorf("profile: %s", resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return cpuSplit{}, err
	}
	return splitRaw(raw, path)
}

// splitRaw keeps a raw profile at path unless empty, and splits it.
func splitRaw(raw []byte, path string) (cpuSplit, error) {
	if path != "" {
		// To look further with go tool pprof.
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return cpuSplit{}, err
		}
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return cpuSplit{}, err
	}
	return splitCPU(p)
}

// syncLatency is the median of n fdatasyncs of a 32 KB append to a file
// in dir: what a commit at durability full waits for at least once.
func syncLatency(dir string, n int) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "sync-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 32<<10)
	ds := make([]time.Duration, n)
	for i := range ds {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		t := time.Now()
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	return ds[n/2], nil
}

// BenchmarkKernelCPU shows where the CPU goes, per call, from CPU
// profiles the processes take of themselves while the calls run: the
// kernel's under a no-op (a health check on the agent listener) and under
// SubmitProposal, at 64 and at 1 in flight; and each of the four
// processes' under the whole loop (read, propose, execute, read back) at
// 1 in flight. The client making the calls (this process, an agent on the
// same machine) profiles itself beside them, unless go test -cpuprofile
// holds the profiler. With strace on PATH it then counts the kernel's
// system calls per no-op and per decision at 1 in flight. Apart from the
// profiles it splits the wall time at 1 in flight of a no-op, a
// decision, the prepared reply (startPrepared) and the prepared reply
// held as long as the decision's handler took, by the processes' own
// metrics: inside the handler, in the kernel's store's COMMITs, and
// outside; and a whole loop's in each process's handlers less the calls
// they make, and the rest (wallUnder). It does so at each durability
// level (AMBIT_BENCH_DURABILITY picks one), and times the disk's
// fdatasync in the stack's folder. A profile costs a process a few
// percent, so these runs are apart from BenchmarkNetworked's figures.
// AMBIT_BENCH_PROFILES names a folder to keep the profiles in, for go
// tool pprof.
func BenchmarkKernelCPU(b *testing.B) {
	if os.Getenv("AMBIT_BENCH") == "" {
		b.Skip("set AMBIT_BENCH=1 (make bench) to start the four processes and profile them")
	}
	ctx := context.Background()
	durabilities := []string{"normal", "full"}
	if d := os.Getenv("AMBIT_BENCH_DURABILITY"); d != "" {
		durabilities = []string{d}
	}
	const window, wallLength = 5 * time.Second, 3 * time.Second
	procs := []string{devstack.Kernel, devstack.Evidence, devstack.Action, devstack.Verifier}
	self := canProfileSelf()
	// strace counts the kernel's system calls, apart from the profiles:
	// tracing slows a process many times over, but not what it calls.
	strace, _ := exec.LookPath("strace")
	for _, durability := range durabilities {
		env := map[string][]string{}
		for _, p := range procs {
			env[p] = []string{"AMBIT_PROFILING=true"}
		}
		var retries atomic.Int64
		st, calls := startBench(b, devstack.Options{Durability: durability, Env: env}, &retries)
		keep := func(what string) func(string) string {
			dir := os.Getenv("AMBIT_BENCH_PROFILES")
			if dir == "" {
				return nil
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			return func(proc string) string {
				return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.pprof", proc, durability, what))
			}
		}
		kernelOps := []struct {
			name string
			conc int
			op   func(int) error
		}{{"no-op", 64, calls.noop}, {"decision", 64, calls.propose}, {"no-op", 1, calls.noop}, {"decision", 1, calls.propose}}
		// The client's CPU shares the machine with the kernel's: a ratio
		// to the no-op is one of the two together.
		kernelProcs, loopProcs := procs[:1], procs
		if self {
			kernelProcs, loopProcs = []string{devstack.Kernel, clientProc}, append(slices.Clip(procs), clientProc)
		}
		var cols []string
		var splits, clientSplits []cpuSplit
		for _, o := range kernelOps {
			what := fmt.Sprintf("%s-c%d", o.name, o.conc)
			b.Run(fmt.Sprintf("%s-%s/c=%d", o.name, durability, o.conc), func(b *testing.B) {
				s, err := profileUnder(ctx, st, window, o.conc, o.op, kernelProcs, keep(what))
				if err != nil {
					b.Fatal(err)
				}
				cols, splits = append(cols, fmt.Sprintf("%s c=%d", o.name, o.conc)), append(splits, s[0])
				b.ReportMetric(s[0].perCall(""), "kernel-cpu-µs/call")
				if self {
					clientSplits = append(clientSplits, s[1])
					b.ReportMetric(s[1].perCall(""), "client-cpu-µs/call")
				}
			})
		}
		var loop []cpuSplit
		b.Run(fmt.Sprintf("loop-%s/c=1", durability), func(b *testing.B) {
			var err error
			loop, err = profileUnder(ctx, st, window, 1, func(i int) error { return loopOnce(ctx, st, i) }, loopProcs, keep("loop"))
			if err != nil {
				b.Fatal(err)
			}
		})
		// Where the time goes at one in flight, apart from the profiles.
		var wall wallCalls
		var wallLoop wallWindow
		wallErr := errors.New("not measured")
		b.Run(fmt.Sprintf("wall-%s/c=1", durability), func(b *testing.B) {
			kernel := stackMetrics(st, devstack.Kernel)
			if wall.noop, wallErr = wallUnder(ctx, kernel, wallLength, calls.noop); wallErr == nil {
				wall.decision, wallErr = wallUnder(ctx, kernel, wallLength, calls.propose)
			}
			// The prepared reply held as long as the decision's handler
			// took: what a handler that long costs outside it, with none
			// of the kernel's work beside it.
			wall.hold = time.Duration(wall.decision.handled(devstack.Kernel, agentService, "SubmitProposal") * float64(time.Microsecond))
			for _, w := range []struct {
				into *wallWindow
				hold time.Duration
			}{{&wall.prepared, 0}, {&wall.held, wall.hold}} {
				if wallErr == nil {
					p, call := preparedCalls(b, st, calls, w.hold)
					*w.into, wallErr = wallUnder(ctx, map[string]string{preparedProc: p.metrics}, wallLength, call)
					p.stop()
				}
			}
			if wallErr == nil {
				wallLoop, wallErr = wallUnder(ctx, stackMetrics(st, procs...), wallLength, func(i int) error { return loopOnce(ctx, st, i) })
			}
			if wallErr != nil {
				b.Fatal(wallErr)
			}
		})
		var noopSys, decisionSys map[string]float64
		sysErr := errors.New("strace is not on PATH")
		if strace != "" {
			pid := st.Processes[devstack.Kernel].PID
			b.Run(fmt.Sprintf("syscalls-%s/c=1", durability), func(b *testing.B) {
				// A machine that forbids tracing loses this table, not the run.
				if noopSys, sysErr = syscallsUnder(strace, pid, 3*time.Second, 1, calls.noop); sysErr == nil {
					decisionSys, sysErr = syscallsUnder(strace, pid, 3*time.Second, 1, calls.propose)
				}
			})
		}
		fsync, err := syncLatency(filepath.Dir(st.KernelDB), 200)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Stop(); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("\nCPU per call, durability %s (µs; from a %s CPU profile each process takes of itself under each load)\n", durability, window)
		printSplits("the kernel under", cols, splits)
		if self {
			printSplits("the client (this benchmark's process) under", cols, clientSplits)
		} else {
			fmt.Println("(the client's own CPU is left out: go test -cpuprofile holds the profiler)")
		}
		if loop != nil {
			printSplits("the whole loop at 1 in flight:", loopProcs, loop)
		}
		if wallErr == nil {
			printWall(durability, wallLength, wall, wallLoop)
		}
		if sysErr == nil {
			printSyscalls(noopSys, decisionSys)
		} else {
			fmt.Printf("(the kernel's system calls are not counted: %v)\n", sysErr)
		}
		fmt.Printf("one fdatasync of a 32 KB append in the stack's folder: p50 %s (a commit at durability full waits for one)\n", fsync.Round(time.Microsecond))
	}
}

// printSyscalls prints the kernel's system calls per call under the no-op
// and under decisions, at one in flight: those made at least once in
// twenty calls, most made in a decision first.
func printSyscalls(noop, decision map[string]float64) {
	both := maps.Clone(noop)
	maps.Copy(both, decision)
	var names []string
	for name := range both {
		if decision[name] >= 0.05 || noop[name] >= 0.05 {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(decision[b], decision[a]), strings.Compare(a, b))
	})
	fmt.Printf("%-66s %13s %13s\n", "the kernel's system calls per call (strace -c), 1 in flight", "no-op", "decision")
	for _, name := range names {
		fmt.Printf("%-66s %13.2f %13.2f\n", name+syscallNotes[name], noop[name], decision[name])
	}
	fmt.Println("(traced, the kernel runs slower: per call, its idling and its background work, checkpoints among them, count more than they would)")
}

// syscallNotes say what the kernel makes a system call for.
var syscallNotes = map[string]string{
	"pwrite64":    ": SQLite writes (a WAL frame is two)",
	"pread64":     ": SQLite reads",
	"fdatasync":   ": a commit at full, checkpoints",
	"fsync":       ": a commit at full, checkpoints",
	"fcntl":       ": SQLite's file and WAL-index locks",
	"write":       ": sockets, and log lines",
	"read":        ": sockets",
	"futex":       ": goroutines woken on other threads",
	"epoll_pwait": ": the network poller",
	"nanosleep":   ": threads idling",
}

// loopOnce is one read → propose → execute → read back of a distinct
// claim (i picks it), as BenchmarkNetworked's loop makes it.
func loopOnce(ctx context.Context, st *stack, i int) error {
	claim := fmt.Sprintf("B-%05d", i%benchClaims)
	r, err := st.Agent.Read(ctx, "bench", demo.RefundPurpose, "claims_db", claim, demo.ClaimFields...)
	if err != nil {
		return err
	}
	out, err := st.Agent.Do(ctx, client.Proposal{Task: "bench", Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(claim, 1200, demo.Claimant), Evidence: []*client.Evidence{r}})
	if err == nil && !out.Decision.Allowed() {
		err = fmt.Errorf("decision %v", out.Decision.GetDecision())
	}
	return err
}

// printSplits prints CPU splits side by side, per call, one column each.
func printSplits(title string, cols []string, splits []cpuSplit) {
	fmt.Printf("%-66s", title)
	for _, c := range cols {
		fmt.Printf(" %13s", c)
	}
	fmt.Println()
	for _, part := range append(partNames(), otherPart, "") {
		name := part
		if part == "" {
			name = "all of the process's CPU"
		}
		fmt.Printf("%-66s", name)
		for _, s := range splits {
			fmt.Printf(" %13.1f", s.perCall(part))
		}
		fmt.Println()
	}
	fmt.Printf("%-66s", "calls in the profile")
	for _, s := range splits {
		fmt.Printf(" %13d", s.calls)
	}
	fmt.Println()
}

func partNames() []string {
	out := make([]string, len(cpuParts))
	for i, p := range cpuParts {
		out[i] = p.name
	}
	return out
}

// TestSplitCPU: each sample goes to the first part whose function its
// stack holds, nested parts counted as themselves.
func TestSplitCPU(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	fns := map[string]*profile.Function{}
	sample := func(ns int64, stack ...string) {
		s := &profile.Sample{Value: []int64{1, ns}}
		for _, name := range stack { // leaf first, as pprof keeps them
			f := fns[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(fns) + 1), Name: name}
				fns[name] = f
				p.Function = append(p.Function, f)
			}
			s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: f}}})
		}
		p.Sample = append(p.Sample, s)
	}
	const submit = "github.com/ambitkernel/ambit/kernel/authority.(*Kernel).Submit"
	const rpc = "google.golang.org/grpc.(*Server).processRPC"
	sample(100, "modernc.org/libc.Xpwrite", "modernc.org/sqlite/lib._walWriteOneFrame", "database/sql.(*Tx).Commit", submit, rpc)
	sample(200, "modernc.org/sqlite/lib._sqlite3VdbeExec", submit, rpc)
	sample(300, "crypto/internal/fips140/edwards25519/field.feMul", "github.com/ambitkernel/ambit/sdk/envelope.(*Signer).SignAll", submit, rpc)
	sample(400, "runtime.gcAssistAlloc", "runtime.mallocgc", submit, rpc)
	sample(500, "github.com/ambitkernel/ambit/kernel/evaluate.Evaluate", submit, rpc)
	sample(600, "google.golang.org/protobuf/proto.Unmarshal", rpc)
	sample(700, "syscall.write", "crypto/tls.(*Conn).Write", "google.golang.org/grpc/internal/transport.(*loopyWriter).run")
	sample(800, "go.uber.org/zap/zapcore.(*ioCore).Write", rpc)
	sample(900, "runtime.findRunnable", "runtime.schedule")
	sample(1000, "time.Sleep")
	// A sidecar's call to the kernel, inside its own handler.
	sample(1100, "google.golang.org/grpc/internal/transport.(*http2Client).Write", "google.golang.org/grpc.(*ClientConn).Invoke",
		"github.com/ambitkernel/ambit/adapters/evidence.(*Core).Read", rpc)
	s, err := splitCPU(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		partDisk: 100, partSQLite: 200, partEnvelope: 300, partGC: 400, partOwn: 500, partHandling: 600,
		partTransport: 700, partLog: 800, partScheduler: 900, partOutbound: 1100, otherPart: 1000,
	}
	for part, d := range want {
		if s.parts[part] != d {
			t.Errorf("%s: %v, want %v", part, s.parts[part], d)
		}
	}
	if s.total != 6600 {
		t.Errorf("total %v, want 6.6µs", s.total)
	}
	s.calls = 11
	if got := s.perCall(""); got != 0.6 {
		t.Errorf("all parts per call: %v µs, want 0.6", got)
	}
	if got := s.perCall(partScheduler); got != 900.0/1000/11 {
		t.Errorf("scheduler per call: %v µs, want %v", got, 900.0/1000/11)
	}
	if _, err := splitCPU(&profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}); err == nil {
		t.Error("a heap profile was split as CPU time")
	}
}

// TestParseStraceSummary reads strace -c's table: rows with and without
// errors, never the header, the rules or the total.
func TestParseStraceSummary(t *testing.T) {
	const summary = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 61.20    0.041234          21      1904           pwrite64
 20.01    0.013482           2      6210           fcntl
  0.00    0.000000           0         1         1 ioctl
------ ----------- ----------- --------- --------- ----------------
100.00    0.054716                  8115         1 total
`
	got, err := parseStraceSummary(summary)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"pwrite64": 1904, "fcntl": 6210, "ioctl": 1}
	if !maps.Equal(got, want) {
		t.Errorf("parseStraceSummary = %v, want %v", got, want)
	}
	if _, err := parseStraceSummary("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n"); err == nil {
		t.Error("parseStraceSummary accepted a summary without rows")
	}
}
