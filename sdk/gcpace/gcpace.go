package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// baseMetrics are what Go's GC percentage is a percentage of: the heap
// the last collection marked live, and the goroutine stacks and globals
// it scanned. The heap may grow by that much times the percentage before
// the next collection.
var baseMetrics = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// heapMinimum is the least base the runtime applies its percentage to:
// a heap smaller than 4 MB (times the percentage over 100) is not
// collected.
const heapMinimum = 4 << 20

// Percent is the GOGC percentage that lets the heap grow by
// max(headroom, base) before the next collection, where base is the live
// heap, stacks and globals the percentage applies to: never below Go's
// default of 100.
func Percent(base, headroom uint64) int {
	const least = 100
	// Beyond this the percentage would not fit the runtime's int32; the
	// headroom it stands for is never that large.
	const most = 1 << 30
	p := float64(headroom) * 100 / float64(max(base, heapMinimum))
	if p >= most {
		return most
	}
	return max(int(p), least)
}

// sentinel is an object nothing references: its cleanup runs after the
// first collection that finds it unreachable, which is the next one. It
// holds a pointer so that it is not one of the tiny objects the runtime
// packs together, whose cleanups may never run.
type sentinel struct {
	_ *sentinel
	_ [8]byte
}

// pacer sets the GC percentage after every collection.
type pacer struct {
	headroom uint64
	sample   []metrics.Sample

	// before is the percentage the process had before Keep.
	before int

	mu      sync.Mutex
	stopped bool
}

// Keep has the collector let the heap grow by at least headroom bytes
// past what the last collection left live, and by as much as Go's
// default would when that is more: after every collection it sets the
// GC percentage from what that collection left ([Percent]). stop restores
// the percentage the process had. Run one at a time: the percentage is
// the process's.
func Keep(headroom uint64) (stop func()) {
	p := &pacer{headroom: headroom, sample: make([]metrics.Sample, len(baseMetrics))}
	for i, name := range baseMetrics {
		p.sample[i].Name = name
	}
	p.before = p.pace()
	p.arm()
	return p.stop
}

// arm has the next collection call p.collected.
func (p *pacer) arm() {
	runtime.AddCleanup(new(sentinel), (*pacer).collected, p)
}

func (p *pacer) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	// Armed first, so that whoever sees this collection's percentage
	// knows the next collection sets it again.
	p.arm()
	p.pace()
}

// pace sets the percentage from what the last collection left and
// returns the one it replaced. The caller holds p.mu, or is Keep.
func (p *pacer) pace() (was int) {
	metrics.Read(p.sample)
	var base uint64
	for _, s := range p.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			base += s.Value.Uint64()
		}
	}
	return debug.SetGCPercent(Percent(base, p.headroom))
}

func (p *pacer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	debug.SetGCPercent(p.before)
}
