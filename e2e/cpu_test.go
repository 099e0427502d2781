package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
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

// cpuParts are checked in order, so that a part nested in another (the
// disk's system calls in SQLite, SQLite in a decision) is counted as
// itself.
var cpuParts = []cpuPart{
	{"disk: SQLite's reads, writes and syncs (system calls)", func(fn string) bool {
		name, ok := strings.CutPrefix(fn, "modernc.org/libc.X")
		return ok && slices.Contains([]string{"pread", "pwrite", "pread64", "pwrite64", "read", "write", "fsync", "fdatasync"}, name)
	}},
	{"SQLite: statements, b-trees, WAL index, locks", prefixed("modernc.org/sqlite", "modernc.org/libc", "database/sql.")},
	{"records signed and hashed (sdk/envelope)", prefixed("github.com/ambitkernel/ambit/sdk/envelope.")},
	{"log lines (zap)", prefixed("go.uber.org/zap")},
	{"garbage collection", func(fn string) bool {
		return strings.HasPrefix(fn, "runtime.gc") || strings.HasPrefix(fn, "runtime.bgs") || strings.HasPrefix(fn, "runtime.sweep") ||
			fn == "gcWriteBarrier" || strings.HasPrefix(fn, "runtime.markroot") || strings.HasPrefix(fn, "runtime.scan")
	}},
	{"decision: memory reads, schema check, facts, evaluation, marshalling", prefixed("github.com/ambitkernel/ambit/kernel/authority.(*Kernel).Submit")},
	{"call handling: decoding, interceptors, encoding", prefixed("google.golang.org/grpc.(*Server).processRPC")},
	{"transport: HTTP/2, TLS, sockets", prefixed("google.golang.org/grpc", "golang.org/x/net/http2", "crypto/tls", "net.", "internal/poll", "syscall.", "runtime.netpoll")},
	{"scheduler: idle Ps looking for work", prefixed("runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall")},
}

const otherPart = "other (timers, the checkpoint publisher, the runtime)"

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

// profileKernel runs op on conc goroutines, closed loop, while the
// kernel takes a CPU profile of itself for d (its configuration sets
// profiling), and returns the profile's time by part and how many calls
// ended inside it. The profile is also written to keep, unless empty.
func profileKernel(ctx context.Context, st *stack, d time.Duration, conc int, op func(i int) error, keep string) (cpuSplit, error) {
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
	// A second of load first, so that the profile sees the steady state.
	time.Sleep(time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", st.Addr(devstack.Kernel, "metrics"), int(d.Seconds())), nil)
	if err != nil {
		return cpuSplit{}, err
	}
	counting.Store(true)
	resp, err := http.DefaultClient.Do(req)
	counting.Store(false)
	if err != nil {
		return cpuSplit{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cpuSplit{}, fmt.Errorf("kernel profile: %s", resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return cpuSplit{}, err
	}
	if keep != "" {
		// To look further with go tool pprof.
		if err := os.WriteFile(keep, raw, 0o600); err != nil {
			return cpuSplit{}, err
		}
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return cpuSplit{}, err
	}
	select {
	case err := <-errs:
		return cpuSplit{}, err
	default:
	}
	s, err := splitCPU(p)
	s.calls = calls.Load()
	return s, err
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

// BenchmarkKernelCPU shows where the kernel's CPU goes, per call: a
// no-op (a health check on the agent listener) and SubmitProposal, at 64
// and at 1 in flight, at each durability level (AMBIT_BENCH_DURABILITY
// picks one), from a CPU profile the kernel takes of itself while the
// calls run. It also times the disk's fdatasync in the stack's folder.
// The profile costs the kernel a few percent, so these runs are apart
// from BenchmarkNetworked's figures. AMBIT_BENCH_PROFILES names a folder
// to keep the profiles in, for go tool pprof.
func BenchmarkKernelCPU(b *testing.B) {
	if os.Getenv("AMBIT_BENCH") == "" {
		b.Skip("set AMBIT_BENCH=1 (make bench) to start the four processes and profile the kernel")
	}
	ctx := context.Background()
	durabilities := []string{"normal", "full"}
	if d := os.Getenv("AMBIT_BENCH_DURABILITY"); d != "" {
		durabilities = []string{d}
	}
	const window = 5 * time.Second
	for _, durability := range durabilities {
		st := startStack(b, devstack.Options{Durability: durability,
			Env: map[string][]string{devstack.Kernel: {"AMBIT_PROFILING=true"}}})
		if err := benchSeed(ctx, st.DataDir); err != nil {
			b.Fatal(err)
		}
		if err := bindBenchTask(ctx, st, "bench"); err != nil {
			b.Fatal(err)
		}
		syscall.Sync()
		r, err := st.Agent.Read(ctx, "bench", demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
		if err != nil {
			b.Fatal(err)
		}
		agentConn, err := st.Conn(ctx, st.Kernel.Agent, "agent")
		if err != nil {
			b.Fatal(err)
		}
		noop := healthpb.NewHealthClient(agentConn)
		submit := client.Proposal{Task: "bench", Purpose: demo.RefundPurpose, Tool: "refund",
			Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}}
		// As in BenchmarkNetworked, a call the kernel answers Unavailable
		// (its store momentarily busy, nothing changed) is made again.
		propose := func(int) error {
			_, err := st.Agent.Propose(ctx, submit)
			for tries := 0; status.Code(err) == codes.Unavailable && tries < 10; tries++ {
				_, err = st.Agent.Propose(ctx, submit)
			}
			return err
		}
		ops := []struct {
			name string
			conc int
			op   func(int) error
		}{
			{"no-op", 64, func(int) error { _, err := noop.Check(ctx, &healthpb.HealthCheckRequest{}); return err }},
			{"decision", 64, propose},
			{"no-op", 1, func(int) error { _, err := noop.Check(ctx, &healthpb.HealthCheckRequest{}); return err }},
			{"decision", 1, propose},
		}
		splits := make([]cpuSplit, len(ops))
		for i, o := range ops {
			b.Run(fmt.Sprintf("%s-%s/c=%d", o.name, durability, o.conc), func(b *testing.B) {
				var keep string
				if dir := os.Getenv("AMBIT_BENCH_PROFILES"); dir != "" {
					keep = filepath.Join(dir, fmt.Sprintf("kernel-%s-%s-c%d.pprof", durability, o.name, o.conc))
				}
				s, err := profileKernel(ctx, st, window, o.conc, o.op, keep)
				if err != nil {
					b.Fatal(err)
				}
				splits[i] = s
				b.ReportMetric(s.perCall(""), "kernel-cpu-µs/call")
			})
		}
		fsync, err := syncLatency(filepath.Dir(st.KernelDB), 200)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Stop(); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("\nthe kernel's CPU per call, durability %s (µs; from a %s CPU profile of the kernel under each load)\n", durability, window)
		fmt.Printf("%-70s", "part")
		for _, o := range ops {
			fmt.Printf(" %14s", fmt.Sprintf("%s c=%d", o.name, o.conc))
		}
		fmt.Println()
		for _, part := range append(partNames(), otherPart, "") {
			name := part
			if part == "" {
				name = "all of the kernel's CPU"
			}
			fmt.Printf("%-70s", name)
			for _, s := range splits {
				fmt.Printf(" %14.1f", s.perCall(part))
			}
			fmt.Println()
		}
		fmt.Printf("%-70s", "calls in the profile")
		for _, s := range splits {
			fmt.Printf(" %14d", s.calls)
		}
		fmt.Printf("\none fdatasync of a 32 KB append in the stack's folder: p50 %s (a commit at durability full waits for one)\n", fsync.Round(time.Microsecond))
	}
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
	s, err := splitCPU(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		cpuParts[0].name: 100, cpuParts[1].name: 200, cpuParts[2].name: 300, cpuParts[4].name: 400,
		cpuParts[5].name: 500, cpuParts[6].name: 600, cpuParts[7].name: 700, cpuParts[3].name: 800,
		cpuParts[8].name: 900, otherPart: 1000,
	}
	for part, d := range want {
		if s.parts[part] != d {
			t.Errorf("%s: %v, want %v", part, s.parts[part], d)
		}
	}
	if s.total != 5500 {
		t.Errorf("total %v, want 5.5µs", s.total)
	}
	s.calls = 11
	if got := s.perCall(""); got != 0.5 {
		t.Errorf("all parts per call: %v µs, want 0.5", got)
	}
	if got := s.perCall(cpuParts[8].name); got != 900.0/1000/11 {
		t.Errorf("scheduler per call: %v µs, want %v", got, 900.0/1000/11)
	}
	if _, err := splitCPU(&profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}); err == nil {
		t.Error("a heap profile was split as CPU time")
	}
}
