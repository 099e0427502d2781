package gcpace_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/gcpace"
)

const mb = 1 << 20

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		base, headroom uint64
		want           int
	}{
		{base: 16 * mb, headroom: 64 * mb, want: 400},
		{base: 32 * mb, headroom: 64 * mb, want: 200},
		{base: 64 * mb, headroom: 64 * mb, want: 100},
		{base: 1024 * mb, headroom: 64 * mb, want: 100},
		{base: 16 * mb, headroom: 0, want: 100},
		// Below Go's 4 MB heap minimum, which the percentage also scales.
		{base: 3 * mb, headroom: 64 * mb, want: 1600},
		{base: 0, headroom: 64 * mb, want: 1600},
		{base: 1, headroom: 1 << 62, want: 1 << 30},
	} {
		if got := gcpace.Percent(c.base, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.base, c.headroom, got, c.want)
		}
	}
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func percent() uint64 { return read("/gc/gogc:percent") }

// sink keeps what collections allocates on the heap; held is a large
// live heap.
var sink, held []byte

// collections is how many times the collector ran while n bytes of
// garbage were allocated, as fast as they can be, beside a small live
// heap.
func collections(n int) uint64 {
	runtime.GC()
	before := read("/gc/cycles/total:gc-cycles")
	churn(n)
	return read("/gc/cycles/total:gc-cycles") - before
}

// withPercent runs the test at Go's default percentage, whatever GOGC the
// environment sets, and restores the process's afterwards.
func withPercent(t *testing.T, p int) {
	prev := debug.SetGCPercent(p)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
}

// churn allocates n bytes of garbage, 4 KB at a time, as fast as it can.
func churn(n int) {
	for range n / 4096 {
		sink = make([]byte, 4096)
	}
}

// collectUntil allocates garbage bytes and collects, until the
// percentage satisfies ok, for up to 5 s: it is set after a collection,
// by a cleanup that runs on its own goroutine, so the collection that
// finds what changed may come before the cleanup that sets the
// percentage for it.
func collectUntil(t *testing.T, garbage int, what string, ok func(uint64) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		churn(garbage)
		runtime.GC()
		time.Sleep(time.Millisecond)
		if p := percent(); ok(p) {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("GC percentage %d after 5 s, want %s (live heap %d bytes)", p, what, read("/gc/heap/live:bytes"))
		}
	}
}

func TestGrowth(t *testing.T) {
	for _, c := range []struct {
		allocated uint64
		elapsed   time.Duration
		want      uint64
	}{
		{allocated: 10 * mb, elapsed: 100 * time.Millisecond, want: 50 * mb},
		{allocated: 10 * mb, elapsed: time.Second, want: 5 * mb},
		{allocated: 100 * mb, elapsed: 100 * time.Millisecond, want: 64 * mb}, // the headroom
		{allocated: 0, elapsed: time.Second, want: 0},
		{allocated: mb, elapsed: 0, want: 64 * mb},
	} {
		if got := gcpace.Growth(c.allocated, c.elapsed, 64*mb); got != c.want {
			t.Errorf("Growth(%d, %s, 64 MB) = %d, want %d", c.allocated, c.elapsed, got, c.want)
		}
	}
}

// TestKeepCollectsOncePerHeadroom counts collections, which depend on
// how fast this machine allocates just now: on a loaded one the pace asks
// for less growth, and a collection starved of CPU lets the heap grow
// past its goal while it marks. So it tries up to three times, and fails
// only if no try collects about once per 64 MB and far less often than Go's
// default.
func TestKeepCollectsOncePerHeadroom(t *testing.T) {
	withPercent(t, 100)
	const garbage = 256 * mb
	const tries = 3
	var failed []string
	for range tries {
		debug.SetGCPercent(100)
		alone := collections(garbage)
		stop := gcpace.Keep(64 * mb)
		paced := collections(garbage)
		stop()
		if paced >= garbage/(64*mb)-1 && paced <= garbage/(64*mb)+3 && alone >= 4*paced {
			return
		}
		failed = append(failed, fmt.Sprintf("%d collections paced, %d at GOGC=100", paced, alone))
	}
	t.Errorf("allocating %d MB beside a small live heap, %d tries: %s", garbage/mb, tries, strings.Join(failed, "; "))
}

func TestKeepPacesALargeHeapAsGoDoes(t *testing.T) {
	withPercent(t, 100)
	stop := gcpace.Keep(64 * mb)
	defer stop()
	collectUntil(t, 32*mb, "above 100 for a small live heap", func(p uint64) bool { return p > 100 })

	held = make([]byte, 128*mb)
	collectUntil(t, 32*mb, "100 for a live heap larger than the headroom", func(p uint64) bool { return p == 100 })

	held = nil
	collectUntil(t, 32*mb, "above 100 again once the large heap is garbage", func(p uint64) bool { return p > 100 })
}

// TestKeepLeavesSlowAllocationToGo: a process that allocates little per
// interval is paced as Go paces it, however small its heap, and one that
// slows down after a burst gets Go's pacing back without waiting for a
// collection.
func TestKeepLeavesSlowAllocationToGo(t *testing.T) {
	withPercent(t, 100)
	stop := gcpace.Keep(64 * mb)
	defer stop()
	collectUntil(t, 32*mb, "above 100 while allocating fast", func(p uint64) bool { return p > 100 })
	for deadline := time.Now().Add(5 * time.Second); percent() != 100; {
		// A few KB in 50 ms: far less than a collection's worth.
		churn(16 << 10)
		time.Sleep(50 * time.Millisecond)
		if time.Now().After(deadline) {
			t.Fatalf("GC percentage %d after 5 s of slow allocation, want 100", percent())
		}
	}
}

func TestStopRestoresThePercentage(t *testing.T) {
	withPercent(t, 150)
	stop := gcpace.Keep(64 * mb)
	if p := percent(); p == 150 {
		t.Fatalf("GC percentage %d: Keep did not set it", p)
	}
	stop()
	stop() // a second stop changes nothing
	if p := percent(); p != 150 {
		t.Fatalf("GC percentage %d after stop, want the 150 before Keep", p)
	}
	// Nor does a collection after it.
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if p := percent(); p != 150 {
		t.Fatalf("GC percentage %d after a collection after stop, want 150", p)
	}
}
