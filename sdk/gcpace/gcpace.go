package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// Interval is how often, at most, a process that allocates fast enough
// collects, as long as the heap need not grow by more than the headroom
// between collections for that.
const Interval = 500 * time.Millisecond

// The metrics Keep reads after every collection: what Go's percentage is
// a percentage of (the heap the last collection marked live, and the
// goroutine stacks and globals it scanned), then the bytes allocated
// since the process started.
var (
	baseMetrics  = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}
	allocsMetric = "/gc/heap/allocs:bytes"
)

// heapMinimum is the least base the runtime applies its percentage to:
// a heap smaller than 4 MB (times the percentage over 100) is not
// collected.
const heapMinimum = 4 << 20

// Growth is how far the heap may grow before the next collection for a
// process that allocated allocated bytes in elapsed: what it allocates in
// [Interval] at that rate, at most headroom.
func Growth(allocated uint64, elapsed time.Duration, headroom uint64) uint64 {
	if elapsed <= 0 {
		return headroom
	}
	g := float64(allocated) * float64(Interval) / float64(elapsed)
	if g >= float64(headroom) {
		return headroom
	}
	return uint64(g)
}

// Percent is the GOGC percentage that lets the heap grow by
// max(growth, base) before the next collection, where base is the live
// heap, stacks and globals the percentage applies to: never below Go's
// default of 100.
func Percent(base, growth uint64) int {
	const least = 100
	// Beyond this the percentage would not fit the runtime's int32; the
	// growth it stands for is never that large.
	const most = 1 << 30
	p := float64(growth) * 100 / float64(max(base, heapMinimum))
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
	// sample holds baseMetrics, then allocsMetric.
	sample []metrics.Sample
	// before is the percentage the process had before Keep.
	before int

	// done ends watch.
	done chan struct{}

	mu      sync.Mutex
	stopped bool
	// at and allocated are when the metrics were last read and the bytes
	// allocated by then; percent is the percentage last set.
	at        time.Time
	allocated uint64
	percent   int
}

// Keep has the collector let the heap grow, past what the last
// collection left live, by what the process allocates in [Interval] at
// the pace it allocated lately (since the last collection or the last
// check between collections), up to headroom bytes, and by as much as
// Go's default would when that is more: after every collection it sets
// the GC percentage from what that collection left ([Growth],
// [Percent]). Until the first collection, Go's default applies. Between
// collections, every [Interval], it lowers the percentage if the process
// now allocates more slowly, so that a burst (a start, a busy minute)
// does not leave an idle process to grow its heap as far as the burst
// did. stop restores the percentage the process had. Run one at a time:
// the percentage is the process's.
func Keep(headroom uint64) (stop func()) {
	p := &pacer{headroom: headroom, sample: make([]metrics.Sample, len(baseMetrics)+1), done: make(chan struct{}), percent: 100}
	for i, name := range append(slices.Clip(baseMetrics), allocsMetric) {
		p.sample[i].Name = name
	}
	p.before = debug.SetGCPercent(100)
	p.read()
	p.arm()
	go p.watch()
	return p.stop
}

// watch eases the percentage every Interval until stop.
func (p *pacer) watch() {
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			p.mu.Lock()
			if !p.stopped {
				p.ease()
			}
			p.mu.Unlock()
		}
	}
}

// ease lowers the percentage to what the pace lately asks for, if that
// is lower: only a collection raises it. The caller holds p.mu.
func (p *pacer) ease() {
	if want := p.wanted(); want < p.percent {
		p.set(want)
	}
}

// set sets the percentage. The caller holds p.mu.
func (p *pacer) set(percent int) {
	debug.SetGCPercent(percent)
	p.percent = percent
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
	p.set(p.wanted())
}

// read reads the metrics, and returns the base Go's percentage applies
// to and the bytes allocated since the last read, in elapsed. The caller
// holds p.mu, or is Keep.
func (p *pacer) read() (base, allocated uint64, elapsed time.Duration) {
	metrics.Read(p.sample)
	value := func(s metrics.Sample) uint64 {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s.Value.Uint64()
	}
	for _, s := range p.sample[:len(baseMetrics)] {
		base += value(s)
	}
	now, total := time.Now(), value(p.sample[len(baseMetrics)])
	allocated, elapsed = total-min(p.allocated, total), now.Sub(p.at)
	p.at, p.allocated = now, total
	return base, allocated, elapsed
}

// wanted is the percentage that what the last collection left and how
// fast the process allocated since the metrics were last read (at a
// collection, or at the last ease) ask for. The caller holds p.mu.
func (p *pacer) wanted() int {
	base, allocated, elapsed := p.read()
	return Percent(base, Growth(allocated, elapsed, p.headroom))
}

func (p *pacer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.done)
	debug.SetGCPercent(p.before)
}
