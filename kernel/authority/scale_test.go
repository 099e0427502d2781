package authority_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/store"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// scaleSizes are the numbers of bound tasks the scale benchmarks hold. A
// million takes minutes to seed and start, so it runs only when
// AMBIT_BENCH_SCALE is set (make bench sets it).
func scaleSizes() []int {
	sizes := []int{10, 10_000, 100_000}
	if os.Getenv("AMBIT_BENCH_SCALE") != "" {
		sizes = append(sizes, 1_000_000)
	}
	return sizes
}

func scaleTask(i int) string { return fmt.Sprintf("task-%07d", i) }

// scaleContract is the benchmark's contract for a task: the coupled
// profile, allowing as many refunds as a benchmark makes, none needing
// review.
func scaleContract(tb testing.TB, taskID string) *contractv1.Contract {
	return coupledContract(tb, taskID, func(c *contractv1.Contract) {
		c.Action.MaxActions = 1 << 30
		c.Action.MaxCumulativeAmount = nil
		c.Action.ApprovalOver = proto.Clone(c.Action.MaxAmount).(*contractv1.Money)
	})
}

// seedTasks writes n bound tasks straight into the store, as the kernel
// would have journaled them: per task, a Propose and a Promote canon
// transition of its own contract item and a task.bind entry, with the
// task's binding row. It writes thousands of tasks per transaction
// instead of three commits per task through the kernel, so a million
// tasks take minutes, not hours. A kernel started over the store replays
// them like any journal.
func seedTasks(tb testing.TB, w *world, n int) {
	tb.Helper()
	const perTx = 5000
	tmpl := scaleContract(tb, "")
	marshal := proto.MarshalOptions{Deterministic: true}
	for lo := 0; lo < n; lo += perTx {
		err := w.st.Update(w.ctx, func(tx store.Tx) error {
			for i := lo; i < min(n, lo+perTx); i++ {
				task := scaleTask(i)
				id := "CTR-" + task
				c := proto.CloneOf(tmpl)
				c.Binding.TaskId = task
				for _, t := range []canon.Transition{
					{Kind: canon.Propose, At: start, Actor: owner, Item: contractItem(id, c)},
					{Kind: canon.Promote, At: start, Actor: owner, ItemID: id},
				} {
					body, err := marshal.Marshal(t.Proto())
					if err != nil {
						return err
					}
					if _, err := tx.Append(start, "canon", id, body); err != nil {
						return err
					}
				}
				if err := tx.BindTask(task, store.Task{ItemID: id, Agent: agentName}, start); err != nil {
					return err
				}
				if _, err := tx.Append(start, "task.bind", task, []byte(id+" for "+agentName)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("seed tasks %d..: %v", lo, err)
		}
	}
}

// liveHeap is the heap in use after a collection, in bytes.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkScale shows what the number of bound tasks costs. For each
// size it seeds the tasks, then measures:
//
//   - startup-replay: a kernel's start over the store without a snapshot
//     (the replay of the whole journal), its time and the heap it keeps
//     (heap-MB);
//   - startup: the same from a snapshot taken after the replay, folding
//     nothing after it;
//   - bind: binding one more task (propose, promote and bind a contract
//     item of its own), the governance path that ran every transition's
//     classification over the whole ledger. The ledger grows by one task
//     per iteration;
//   - decide: a decision (Submit, allowed, with a capability) on a task
//     drawn at random from up to 256 tasks spread over the whole range;
//   - beside: the same decisions in rounds alternating with decisions on
//     a store of 10 tasks held beside it, open in the same process.
//   - stretch: the same decisions, stretchLength in a row, their wall
//     and CPU time and the collections that ran (stretchOf);
//   - wide: decisions on tasks drawn from up to wideTasks, more than the
//     kernel keeps compiled contracts of, each alike, then half of them
//     on a few busy tasks (wideOf).
//
// The figures at 10 tasks are the baseline the larger sizes are read
// against. decide's baseline ran minutes before, on a smaller heap: its
// ratio holds all a size costs, the collector's share included, but also
// whatever else the shared machine did in between. beside's baseline
// runs moments apart on the same heap, so its rounds' ratios show what
// the size costs a decision itself, and how much one round differs from
// the next.
func BenchmarkScale(b *testing.B) {
	var rows []scaleRow
	// perOp times one sub-benchmark's loop.
	perOp := func(ops int, since time.Time) time.Duration {
		return time.Since(since) / time.Duration(max(ops, 1))
	}
	defer func() { printScale(rows) }()
	base := newWorld(b)
	seedTasks(b, base, 10)
	quietKernel(b, base)
	baseProposals := scaleProposals(base, 10, drawnTasks)
	for _, n := range scaleSizes() {
		r := scaleRow{n: n}
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			w := newWorld(b)
			t0 := time.Now()
			seedTasks(b, w, n)
			b.Logf("seeded %d tasks in %s", n, time.Since(t0).Round(time.Millisecond))
			opts := w.options(w.st)
			opts.Log = zap.NewNop()

			// start measures a kernel's start over the store: its time and
			// the heap it keeps.
			startKernel := func(b *testing.B, took *time.Duration, heapMB *float64) {
				ops := 0
				var sum time.Duration
				for b.Loop() {
					ops++
					b.StopTimer()
					w.k = nil
					before := liveHeap()
					b.StartTimer()
					t0 := time.Now()
					k, err := authority.New(w.ctx, opts)
					if err != nil {
						b.Fatal(err)
					}
					sum += time.Since(t0)
					b.StopTimer()
					after := liveHeap()
					*heapMB = float64(after-min(before, after)) / (1 << 20)
					b.ReportMetric(*heapMB, "heap-MB")
					w.k = k
					b.StartTimer()
				}
				*took = sum / time.Duration(max(ops, 1))
			}
			// The seeded store has no snapshot: the kernel replays the
			// whole journal, as one would the first time. Then it writes
			// a snapshot, as a running kernel does every so many
			// transitions, and the next start begins from it.
			b.Run("startup-replay", func(b *testing.B) { startKernel(b, &r.replay, &r.replayMB) })
			if w.k == nil {
				b.Fatal("no kernel started")
			}
			t0 = time.Now()
			if err := w.k.Snapshot(w.ctx); err != nil {
				b.Fatal(err)
			}
			b.Logf("snapshot of %d tasks written in %s", n, time.Since(t0).Round(time.Millisecond))
			b.Run("startup", func(b *testing.B) { startKernel(b, &r.startup, &r.heapMB) })
			if w.k == nil {
				b.Fatal("no kernel started")
			}

			next := n
			b.Run("bind", func(b *testing.B) {
				ops, t0 := 0, time.Now()
				defer func() { r.bind = perOp(ops, t0) }()
				for b.Loop() {
					ops++
					task := scaleTask(next)
					next++
					id := "CTR-" + task
					if _, err := w.k.ProposeItem(w.ctx, owner, contractItem(id, scaleContract(b, task))); err != nil {
						b.Fatal(err)
					}
					if _, err := w.k.PromoteItem(w.ctx, owner, id); err != nil {
						b.Fatal(err)
					}
					if _, err := w.k.BindTask(w.ctx, "governance", task, id, agentName); err != nil {
						b.Fatal(err)
					}
				}
			})

			ps := scaleProposals(w, n, drawnTasks)
			rng := rand.New(rand.NewPCG(1, 2))
			b.Run("decide", func(b *testing.B) {
				ops, t0 := 0, time.Now()
				defer func() { r.decide = perOp(ops, t0) }()
				for b.Loop() {
					ops++
					decideOne(b, w, ps, rng)
				}
			})
			r.beside = besideBase(b, w, ps, base, baseProposals)
			r.stretch = stretchOf(b, w, ps)
			r.wide, r.busy = wideOf(b, w, n)
			rows = append(rows, r)
		})
	}
}

// drawnTasks is how many tasks decide, beside and stretch draw from.
const drawnTasks = 256

// scaleProposals are proposals on up to k of w's n tasks, spread over
// the seeded range, each citing an evidence read of its own.
func scaleProposals(w *world, n, k int) []authority.Proposal {
	var ps []authority.Proposal
	k = min(n, k)
	for i := range k {
		task := scaleTask(i * n / k)
		env, _ := w.read(task)
		ps = append(ps, proposal(task, refund(1740, subject), env))
	}
	return ps
}

// decideOne submits one of ps, drawn by rng (the first when rng is nil),
// and fails unless it is allowed with a capability.
func decideOne(b *testing.B, w *world, ps []authority.Proposal, rng *rand.Rand) {
	p := ps[0]
	if rng != nil {
		p = ps[rng.IntN(len(ps))]
	}
	d, err := w.k.Submit(w.ctx, p)
	if err != nil || d.GetCapability() == nil {
		b.Fatalf("%v %v", d, err)
	}
}

// besideBase times decisions on w and on base in alternate rounds, each
// side first in every other round, and returns each round's ratio of w's
// time to base's.
func besideBase(b *testing.B, w *world, ps []authority.Proposal, base *world, baseProposals []authority.Proposal) []float64 {
	const rounds, perRound, settle = 7, 1500, 300 * time.Millisecond
	rng := rand.New(rand.NewPCG(3, 4))
	timed := func(w *world, ps []authority.Proposal) time.Duration {
		// What the round before left its store's background to do (moving
		// capabilities, checkpointing the WAL) is done before this one,
		// not timed in it.
		time.Sleep(settle)
		t0 := time.Now()
		for range perRound {
			decideOne(b, w, ps, rng)
		}
		return time.Since(t0)
	}
	ratios := make([]float64, 0, rounds)
	for i := range rounds {
		var at, atBase time.Duration
		if i%2 == 0 {
			atBase = timed(base, baseProposals)
			at = timed(w, ps)
		} else {
			at = timed(w, ps)
			atBase = timed(base, baseProposals)
		}
		ratios = append(ratios, float64(at)/float64(atBase))
	}
	return ratios
}

// scaleRow is one size's figures.
type scaleRow struct {
	n                             int
	startup, replay, bind, decide time.Duration
	heapMB, replayMB              float64
	// beside is the ratio of each round of decisions to its baseline's
	// beside it (besideBase).
	beside []float64
	// stretch is a long run of decisions in a row (stretchOf).
	stretch stretch
	// wide is a decision on a task drawn from many, busy one when half
	// of them are on a few (wideOf).
	wide, busy time.Duration
}

// stretch is what a run of decisions in a row cost each decision: its
// wall time and the process's CPU time, and the collections that ran.
type stretch struct {
	wall, cpu   time.Duration
	collections uint32
}

// stretchLength is long enough that a million tasks' heap, which Go
// lets grow to twice the gigabyte kept before it collects, is collected
// during the stretch: the collector's share of a decision is then in
// the figure, as it is in a kernel that runs for hours.
const stretchLength = 100_000

// stretchOf times stretchLength decisions in a row on ps, after a short
// warm-up. The rounds beside a small store share one process, and so one
// heap: a collection over a large heap costs both sides alike. A
// stretch at each size, read against the smallest's, holds it.
func stretchOf(b *testing.B, w *world, ps []authority.Proposal) stretch {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		decideOne(b, w, ps, rng)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, t0 := processCPU(b), time.Now()
	for range stretchLength {
		decideOne(b, w, ps, rng)
	}
	wall, cpu := time.Since(t0), processCPU(b)-cpu0
	runtime.ReadMemStats(&after)
	return stretch{wall: wall / stretchLength, cpu: cpu / stretchLength, collections: after.NumGC - before.NumGC}
}

// wideTasks is how many tasks wideOf draws from: four times the
// contracts the kernel keeps compiled (maxCompiled), so that most draws
// find their task's contract no longer compiled, as draws from a million
// tasks would (three in four here, all but one in a hundred there).
const wideTasks = 1 << 15

// wideOf is what a decision costs on a task drawn at random from up to
// wideTasks of w's n, spread over the range, once each of them has been
// decided on: the cost of the kernel's bounded memories (a compiled
// contract loaded from the journal and compiled again, a binding read
// again), not of a first decision.
//
// busy is the same when every other decision is on one of busyTasks, half
// as many as the kernel keeps compiled: what the kernel keeps of the
// contracts decided on again and again while others come once.
func wideOf(b *testing.B, w *world, n int) (wide, busy time.Duration) {
	ps := scaleProposals(w, n, wideTasks)
	for i := range ps {
		decideOne(b, w, ps[i:i+1], nil)
	}
	const decisions = 20_000
	rng := rand.New(rand.NewPCG(7, 8))
	t0 := time.Now()
	for range decisions {
		decideOne(b, w, ps, rng)
	}
	wide = time.Since(t0) / decisions
	t0 = time.Now()
	for i := range decisions {
		if i%2 == 0 {
			decideOne(b, w, ps[:min(len(ps), busyTasks)], rng)
		} else {
			decideOne(b, w, ps, rng)
		}
	}
	return wide, time.Since(t0) / decisions
}

// busyTasks is how many tasks wideOf's busy decisions come back to.
const busyTasks = 1 << 12

// processCPU is the CPU time the process has used, in user and system
// mode, on all its threads.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// printScale prints the scale figures, each size beside the smallest.
func printScale(rows []scaleRow) {
	if len(rows) == 0 || rows[0].bind == 0 || rows[0].decide == 0 {
		return
	}
	base := rows[0]
	fmt.Printf("\nscale figures (in process, one run; ratios against %d tasks in the same run)\n", base.n)
	fmt.Printf("%9s | %12s %9s | %12s %9s | %22s | %22s | %s\n", "tasks", "start-up", "heap", "full replay", "heap", "bind one more task", "random-task decision",
		"decision ÷ 10 tasks beside it, each round (min / median)")
	for _, r := range rows {
		rounds := make([]string, len(r.beside))
		for i, x := range r.beside {
			rounds[i] = fmt.Sprintf("%.2f", x)
		}
		lo, mid := minMedian(r.beside)
		fmt.Printf("%9d | %12s %6.0f MB | %12s %6.0f MB | %10s %9.2fx | %10s %9.2fx | %s (%.2fx / %.2fx)\n", r.n, r.startup.Round(time.Microsecond), r.heapMB,
			r.replay.Round(time.Microsecond), r.replayMB,
			r.bind.Round(time.Microsecond), float64(r.bind)/float64(base.bind),
			r.decide.Round(time.Microsecond), float64(r.decide)/float64(base.decide),
			strings.Join(rounds, " "), lo, mid)
	}
	fmt.Printf("\na stretch of %d decisions in a row at each size, the collector's work over its heap included\n", stretchLength)
	fmt.Printf("%9s | %22s | %22s | %s\n", "tasks", "wall a decision", "process CPU a decision", "collections")
	for _, r := range rows {
		st := r.stretch
		fmt.Printf("%9d | %10s %9.2fx | %10s %9.2fx | %d\n", r.n, st.wall.Round(time.Microsecond), float64(st.wall)/float64(base.stretch.wall),
			st.cpu.Round(time.Microsecond), float64(st.cpu)/float64(base.stretch.cpu), st.collections)
	}
	fmt.Printf("\ndecisions on tasks drawn from up to %d, each decided on once before: past the %d contracts the kernel keeps compiled\n", wideTasks, authority.MaxCompiled)
	fmt.Printf("%9s | %10s | %22s | %s\n", "tasks", "drawn from", "a decision", fmt.Sprintf("every other one on %d of them", busyTasks))
	for _, r := range rows {
		fmt.Printf("%9d | %10d | %10s %9.2fx | %10s %9.2fx\n", r.n, min(r.n, wideTasks), r.wide.Round(time.Microsecond), float64(r.wide)/float64(base.wide),
			r.busy.Round(time.Microsecond), float64(r.busy)/float64(base.busy))
	}
}

// minMedian is the least and the median of xs (0 and 0 when empty).
func minMedian(xs []float64) (lo, mid float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[0], s[len(s)/2]
}

// BenchmarkItemsAt lists every item of a ledger of 10,000 tasks as it
// stood at a past instant, a page of 1,000 at a time, as ambitctl ledger
// at does; each iteration asks for another instant, so that each folds
// the journal afresh: from its start while the store holds no snapshot
// (replay), then from a snapshot taken before the instants asked
// (from-snapshot). now lists the ledger as it stands, for comparison:
// what is left is loading each page's contracts from the journal, which
// both do.
func BenchmarkItemsAt(b *testing.B) {
	const n = 10_000
	w := newWorld(b)
	seedTasks(b, w, n)
	k := quietKernel(b, w)
	at := start
	list := func(past bool) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				q, items := authority.ItemQuery{Limit: 1000}, 0
				if past {
					at = at.Add(time.Nanosecond)
					q.At = at
				}
				for {
					page, _, next, err := k.Items(w.ctx, q)
					if err != nil {
						b.Fatal(err)
					}
					items += len(page)
					if q.After = next; next == "" {
						break
					}
				}
				if items != n {
					b.Fatalf("%d items listed, want %d", items, n)
				}
			}
		}
	}
	b.Run("replay", list(true))
	if err := k.Snapshot(w.ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("from-snapshot", list(true))
	b.Run("now", list(false))
}
