package e2e_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/devstack"
)

// BenchmarkGCPacing measures what pacing the garbage collector by
// gc_headroom_mb (package gcpace, 64 MB by default) saves the kernel:
// its CPU per decision and per no-op at 64 in flight, read from the
// kernel process's own CPU time, and the resident memory it then peaks
// at, against the same kernel left to Go's own pacing (GOGC=100). The
// two alternate, AMBIT_BENCH_ROUNDS rounds of each (default 3), each on
// a stack of its own at durability normal.
func BenchmarkGCPacing(b *testing.B) {
	if os.Getenv("AMBIT_BENCH") == "" {
		b.Skip("set AMBIT_BENCH=1 (make bench) to start the four processes and measure")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("AMBIT_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	arms := []struct {
		name string
		env  []string
	}{{"Go's pacing (GOGC=100)", []string{"GOGC=100"}}, {"gc_headroom_mb: 64 (default)", nil}}
	type sample struct{ decision, noop, rss float64 }
	samples := make([][]sample, len(arms))
	var retries atomic.Int64
	for range rounds {
		for i, arm := range arms {
			st, calls := startBench(b, devstack.Options{Durability: "normal", Env: map[string][]string{devstack.Kernel: arm.env}}, &retries)
			pid := st.Processes[devstack.Kernel].PID
			const decisions, noops = 20000, 80000
			closedLoop(b, 3000, 64, calls.propose) // warm up
			c0 := processCPU(b, pid)
			closedLoop(b, decisions, 64, calls.propose)
			c1 := processCPU(b, pid)
			closedLoop(b, noops, 64, calls.noop)
			c2 := processCPU(b, pid)
			samples[i] = append(samples[i], sample{
				decision: float64((c1-c0)/decisions) / 1e3, noop: float64((c2-c1)/noops) / 1e3, rss: float64(peakRSS(b, pid)) / (1 << 20)})
			if err := st.Stop(); err != nil {
				b.Fatal(err)
			}
		}
	}
	fmt.Printf("\nthe kernel's garbage collector paced by gc_headroom_mb or by Go (%d rounds alternating; each cell: every round, then min / median)\n", rounds)
	fmt.Printf("%-30s | %-40s | %-40s | %s\n", "kernel", "CPU µs per decision, 64 in flight", "CPU µs per no-op, 64 in flight", "peak resident MB")
	for i, arm := range arms {
		col := func(get func(sample) float64) string {
			xs := make([]float64, len(samples[i]))
			parts := make([]string, len(xs))
			for j, s := range samples[i] {
				xs[j] = get(s)
				parts[j] = fmt.Sprintf("%.0f", xs[j])
			}
			slices.Sort(xs)
			return fmt.Sprintf("%s (%.0f / %.0f)", strings.Join(parts, " "), xs[0], xs[len(xs)/2])
		}
		fmt.Printf("%-30s | %-40s | %-40s | %s\n", arm.name, col(func(s sample) float64 { return s.decision }),
			col(func(s sample) float64 { return s.noop }), col(func(s sample) float64 { return s.rss }))
	}
}

// closedLoop makes n calls of op over conc goroutines, closed loop.
func closedLoop(b *testing.B, n, conc int, op func(int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := op(int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// processCPU is the user and system CPU time process pid has used.
func processCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's name, which may hold spaces, closed
	// by the last ")": utime and stime are the 14th and 15th of the line.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	// Linux counts in USER_HZ, 100 a second on every platform Go runs on.
	return time.Duration(ticks) * 10 * time.Millisecond
}

// peakRSS is process pid's peak resident memory, in bytes.
func peakRSS(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for l := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/status: VmHWM %q: %v", pid, v, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("/proc/%d/status has no VmHWM", pid)
	return 0
}
