package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// benchClaims is how many distinct claims the loop benchmark can pay
// before it wraps around (a wrapped claim reads back as doubled, which
// costs the same).
const benchClaims = 20000

// benchSeed adds the loop's claims to the example's claims.db, whose
// tables refund-data made.
func benchSeed(ctx context.Context, dataDir string) error {
	db, err := sqldb.Open(filepath.Join(dataDir, "claims.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for i := range benchClaims {
		if _, err := tx.ExecContext(ctx, `INSERT INTO claims (claim_id, claimant_id, receipt_total, receipt_date, cost_centre,
			salary, medical_notes, bank_account, disciplinary_notes, row_version) VALUES (?, ?, '12.00', '2026-03-02', 'CC-410', 'x', 'x', 'x', 'x', 1)`,
			fmt.Sprintf("B-%05d", i), demo.Claimant); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// bindBenchTask binds a task whose contract, the example's with its
// record binding lifted, allows as many refunds as the benchmark makes,
// without review, for any of employee-7's claims.
func bindBenchTask(ctx context.Context, st *stack, task string) error {
	e, _ := st.Example(demo.ExpenseRefund)
	c, err := demo.Contract(e, task, demo.Claim1001, time.Now())
	if err != nil {
		return err
	}
	c.Binding.Record = nil
	c.Binding.StateVersion = "*"
	c.Binding.ValidUntil = timestamppb.New(time.Now().Add(24 * time.Hour))
	c.Action.MaxActions = 1 << 30
	c.Action.MaxCumulativeAmount = nil
	c.Action.ApprovalOver = proto.Clone(c.Action.MaxAmount).(*contractv1.Money)
	id := "ctr-" + task
	if _, err := st.Gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: demo.ContractItem(id, demo.ProvenanceRef(e, c), c)}); err != nil {
		return err
	}
	if _, err := st.Gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: id}); err != nil {
		return err
	}
	_, err = st.Gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: task, ContractItemId: id, Agent: st.Agents[0]})
	return err
}

type figure struct {
	name          string
	conc          int
	ops           int
	elapsed       time.Duration
	p50, p99, avg time.Duration
}

func (f figure) perSec() float64 { return float64(f.ops) / f.elapsed.Seconds() }

// measure runs n calls of op over conc goroutines, closed loop, and
// reports throughput and latency percentiles.
func measure(b *testing.B, name string, conc int, op func(i int) error) figure {
	b.Helper()
	n := b.N
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	b.ResetTimer()
	start := time.Now()
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += conc {
				t0 := time.Now()
				if err := op(i); err != nil {
					errs <- err
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	var sum time.Duration
	for _, l := range lat {
		all = append(all, l...)
		for _, d := range l {
			sum += d
		}
	}
	slices.Sort(all)
	f := figure{name: name, conc: conc, ops: len(all), elapsed: elapsed,
		p50: all[len(all)/2], p99: all[min(len(all)-1, len(all)*99/100)], avg: sum / time.Duration(len(all))}
	b.ReportMetric(f.perSec(), "ops/s")
	b.ReportMetric(float64(f.p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(f.p99.Microseconds()), "p99-µs")
	return f
}

// BenchmarkNetworked measures SubmitProposal over gRPC with mutual TLS at
// concurrency 1, 16 and 64 with the kernel's store at both durability
// levels (normal and full; AMBIT_BENCH_DURABILITY picks one), each beside
// a no-op call (a health check) on the same listener and the same
// proposal answered with a prepared reply by the kernel's server stack
// without its work (startPrepared), in the same run; the whole read →
// propose → execute → readback loop beside its bare hops at each level;
// and, when AMBIT_BENCH_OPA names an opa binary, an OPA server deciding
// the seed suite at the same concurrencies. It prints the ratios
// of each round, and with AMBIT_BENCH_ROUNDS > 1 their minimum and median
// over the rounds: the machine is shared, so one round is one sample.
func BenchmarkNetworked(b *testing.B) {
	if os.Getenv("AMBIT_BENCH") == "" {
		b.Skip("set AMBIT_BENCH=1 (make bench) to start the four processes and measure")
	}
	durabilities := []string{"normal", "full"}
	if d := os.Getenv("AMBIT_BENCH_DURABILITY"); d != "" {
		durabilities = []string{d}
	}
	rounds := 1
	if n, err := strconv.Atoi(os.Getenv("AMBIT_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	var base *opaBaseline
	if opa := os.Getenv("AMBIT_BENCH_OPA"); opa != "" {
		base = newOPABaseline(b, opa)
	}
	var retries atomic.Int64
	var all [][]figure
	for r := range rounds {
		figs := networkedRound(b, durabilities, base, &retries)
		fmt.Printf("\nround %d of %d\n", r+1, rounds)
		printSummary(figs, durabilities, base != nil)
		all = append(all, figs)
	}
	if rounds > 1 {
		printRounds(all, durabilities, base != nil)
	}
	fmt.Printf("SubmitProposal calls retried after Unavailable (store busy, nothing changed): %d\n", retries.Load())
}

// opaBaseline is an OPA server and the seed suite's requests, checked to
// decide what the kernel's evaluator decides.
type opaBaseline struct {
	srv    *opaServer
	bodies [][]byte
}

func newOPABaseline(b *testing.B, bin string) *opaBaseline {
	ctx := context.Background()
	srv := startOPA(b, bin)
	bodies, want := seedRequests(b)
	// The baseline must decide what the kernel decides, or its figures
	// compare different work.
	for i, body := range bodies {
		got, err := srv.decide(ctx, body)
		if err != nil {
			b.Fatal(err)
		}
		if !slices.Equal(got.Reasons, want[i].Reasons) || got.Outcome != want[i].Outcome {
			b.Fatalf("seed episode %d: OPA decides %+v, the evaluator %+v", i, got, want[i])
		}
	}
	return &opaBaseline{srv: srv, bodies: bodies}
}

// benchCalls are the calls the networked benchmarks measure, each taking
// the call's number.
type benchCalls struct {
	// noop is a health check on the kernel's agent listener.
	noop func(int) error
	// propose submits the same granted proposal on the bench task, with
	// evidence read once.
	propose func(int) error
	// proposal is what propose submits.
	proposal client.Proposal
}

// preparedCalls starts a prepared-reply process for st (startPrepared)
// answering calls' proposal after hold with the decision the kernel made
// for it, and returns the process and the call submitting that proposal
// to it.
func preparedCalls(b *testing.B, st *stack, calls benchCalls, hold time.Duration) (preparedProcess, func(int) error) {
	ctx := context.Background()
	d, err := st.Agent.Propose(ctx, calls.proposal)
	if err != nil || !d.Allowed() {
		b.Fatalf("the decision to prepare: %v %v", d, err)
	}
	p := startPrepared(b, st, d.SubmitProposalResponse, hold)
	return p, func(int) error {
		d, err := p.agent.Propose(ctx, calls.proposal)
		if err == nil && !d.Allowed() {
			err = fmt.Errorf("decision %v", d.GetDecision())
		}
		return err
	}
}

// startBench starts a stack with o, seeds the loop's claims, binds the
// bench task and reads the evidence its proposals cite. A proposal the
// kernel answers Unavailable (its store momentarily busy, nothing changed)
// is made again, as a client would, counted in retries.
func startBench(b *testing.B, o devstack.Options, retries *atomic.Int64) (*stack, benchCalls) {
	ctx := context.Background()
	st := startStack(b, o)
	if err := benchSeed(ctx, st.DataDir); err != nil {
		b.Fatal(err)
	}
	if err := bindBenchTask(ctx, st, "bench"); err != nil {
		b.Fatal(err)
	}
	// What set-up wrote (the seeded claims, the last stack's files)
	// reaches the disk now, not by writeback while the commits measured
	// next share the disk with it.
	syscall.Sync()
	submit := benchProposal(ctx, b, st)
	agentConn, err := st.Conn(ctx, st.Kernel.Agent, "agent")
	if err != nil {
		b.Fatal(err)
	}
	health := healthpb.NewHealthClient(agentConn)
	return st, benchCalls{
		noop: func(int) error {
			_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		},
		propose: func(int) error {
			d, err := st.Agent.Propose(ctx, submit)
			for tries := 0; status.Code(err) == codes.Unavailable && tries < 10; tries++ {
				retries.Add(1)
				d, err = st.Agent.Propose(ctx, submit)
			}
			if err == nil && !d.Allowed() {
				err = fmt.Errorf("decision %v", d.GetDecision())
			}
			return err
		},
		proposal: submit,
	}
}

// benchProposal is the granted proposal the benchmarks make on the bench
// task (bindBenchTask), citing evidence read once.
func benchProposal(ctx context.Context, tb testing.TB, st *stack) client.Proposal {
	tb.Helper()
	r, err := st.Agent.Read(ctx, "bench", demo.RefundPurpose, "claims_db", demo.Claim1001, demo.ClaimFields...)
	if err != nil {
		tb.Fatal(err)
	}
	return client.Proposal{Task: "bench", Purpose: demo.RefundPurpose, Tool: "refund",
		Args: demo.Refund(demo.Claim1001, 1740, demo.Claimant), Evidence: []*client.Evidence{r}}
}

// networkedRound measures every figure once, each beside its baseline.
func networkedRound(b *testing.B, durabilities []string, base *opaBaseline, retries *atomic.Int64) []figure {
	ctx := context.Background()
	var figs []figure
	for _, durability := range durabilities {
		st, calls := startBench(b, devstack.Options{Durability: durability}, retries)
		preparedProc, prepared := preparedCalls(b, st, calls, 0)
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("noop-%s/c=%d", durability, conc), func(b *testing.B) {
				figs = append(figs, measure(b, "noop-"+durability, conc, calls.noop))
			})
			b.Run(fmt.Sprintf("prepared-%s/c=%d", durability, conc), func(b *testing.B) {
				figs = append(figs, measure(b, "prepared-"+durability, conc, prepared))
			})
			b.Run(fmt.Sprintf("submit-%s/c=%d", durability, conc), func(b *testing.B) {
				figs = append(figs, measure(b, "submit-"+durability, conc, calls.propose))
			})
		}
		preparedProc.stop()
		figs = append(figs, measureLoop(b, st, durability)...)
		// Stopped now, not when the benchmark ends: an idle stack's
		// processes would share the cores with the next one measured.
		if err := st.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	if base != nil {
		for _, conc := range []int{1, 16, 64} {
			// Open the connections first, as the gRPC channel is open
			// before its calls are measured: HTTP/1.1 needs one per call
			// in flight.
			var wg sync.WaitGroup
			for range conc {
				wg.Go(func() {
					for j := range 4 {
						_, _ = base.srv.decide(ctx, base.bodies[j])
					}
				})
			}
			wg.Wait()
			b.Run(fmt.Sprintf("opa/c=%d", conc), func(b *testing.B) {
				figs = append(figs, measure(b, "opa", conc, func(i int) error {
					_, err := base.srv.decide(ctx, base.bodies[i%len(base.bodies)])
					return err
				}))
			})
		}
	}
	return figs
}

// measureLoop measures the whole loop on st beside its bare hops: four
// agent calls and five adapter-to-kernel calls, each a no-op over the same
// kind of connection.
func measureLoop(b *testing.B, st *stack, durability string) []figure {
	ctx := context.Background()
	hopConns := []string{st.Info.Evidence, st.Kernel.Adapter, st.Kernel.Adapter, st.Kernel.Agent, st.Info.Action, st.Kernel.Adapter, st.Kernel.Adapter, st.Info.Verifier, st.Kernel.Adapter}
	ids := []string{"agent", "evidence", "evidence", "agent", "agent", "action", "action", "agent", "verifier"}
	hops := make([]healthpb.HealthClient, len(hopConns))
	for i, addr := range hopConns {
		conn, err := st.Conn(ctx, addr, ids[i])
		if err != nil {
			b.Fatal(err)
		}
		hops[i] = healthpb.NewHealthClient(conn)
	}
	var figs []figure
	// The proposals measured before wrote much that is not on the disk
	// yet.
	syscall.Sync()
	b.Run("loop-hops-"+durability+"/c=1", func(b *testing.B) {
		figs = append(figs, measure(b, "loop-hops-"+durability, 1, func(int) error {
			for _, h := range hops {
				if _, err := h.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					return err
				}
			}
			return nil
		}))
	})
	b.Run("loop-"+durability+"/c=1", func(b *testing.B) {
		figs = append(figs, measure(b, "loop-"+durability, 1, func(i int) error { return loopOnce(ctx, st, i) }))
	})
	return figs
}

func last(figs []figure, name string, conc int) (figure, bool) {
	for i := len(figs) - 1; i >= 0; i-- {
		if figs[i].name == name && figs[i].conc == conc {
			return figs[i], true
		}
	}
	return figure{}, false
}

func printSummary(figs []figure, durabilities []string, opa bool) {
	fmt.Printf("\nnetworked figures (loopback; each ratio against a baseline measured in the same round)\n")
	fmt.Printf("%-34s %5s %10s %10s %10s | %s\n", "call", "conc", "ops/s", "p50", "p99", "ratios")
	row := func(name string, f figure, ratio string) {
		fmt.Printf("%-34s %5d %10.0f %10s %10s | %s\n", name, f.conc, f.perSec(), f.p50.Round(time.Microsecond), f.p99.Round(time.Microsecond), ratio)
	}
	vs := func(f, base figure, what string) string {
		return fmt.Sprintf("p50 %.2fx %s, throughput %.2fx", float64(f.p50)/float64(base.p50), what, f.perSec()/base.perSec())
	}
	for _, d := range durabilities {
		for _, conc := range []int{1, 16, 64} {
			n, ok1 := last(figs, "noop-"+d, conc)
			s, ok2 := last(figs, "submit-"+d, conc)
			if !ok1 || !ok2 {
				continue
			}
			row("no-op (mTLS gRPC health check)", n, "")
			ratio := vs(s, n, "the no-op")
			if p, ok := last(figs, "prepared-"+d, conc); ok {
				row("prepared reply (the kernel's stack, no work)", p, vs(p, n, "the no-op"))
				ratio += "; " + vs(s, p, "prepared")
			}
			if o, ok := last(figs, "opa", conc); ok {
				ratio += "; " + vs(s, o, "OPA")
			}
			row("SubmitProposal, durability "+d, s, ratio)
		}
	}
	if opa {
		for _, conc := range []int{1, 16, 64} {
			if o, ok := last(figs, "opa", conc); ok {
				ratio := ""
				if n, ok := last(figs, "noop-"+durabilities[0], conc); ok {
					ratio = vs(o, n, "the gRPC no-op")
				}
				row("OPA server (HTTPS, mutual TLS)", o, ratio)
			}
		}
	} else {
		fmt.Println("OPA baseline not run: set AMBIT_BENCH_OPA to an opa binary (make bench installs one)")
	}
	for _, d := range durabilities {
		if h, ok := last(figs, "loop-hops-"+d, 1); ok {
			if l, ok := last(figs, "loop-"+d, 1); ok {
				row("9 bare hops", h, "")
				row("whole loop, durability "+d, l,
					fmt.Sprintf("p50 %.2fx the bare hops (%.0f%% beyond them)", float64(l.p50)/float64(h.p50), 100*(float64(l.p50)/float64(h.p50)-1)))
			}
		}
	}
}

// printRounds prints each ratio's minimum and median over the rounds.
func printRounds(rounds [][]figure, durabilities []string, opa bool) {
	fmt.Printf("\nratios over %d rounds (min / median)\n", len(rounds))
	ratio := func(what string, f func(figs []figure) (float64, bool)) {
		var xs []float64
		for _, figs := range rounds {
			if x, ok := f(figs); ok {
				xs = append(xs, x)
			}
		}
		if len(xs) == 0 {
			return
		}
		slices.Sort(xs)
		fmt.Printf("%-62s %6.2f / %6.2f\n", what, xs[0], xs[len(xs)/2])
	}
	pair := func(a, an string, conc int, b, bn string, bconc int, p50 bool) func([]figure) (float64, bool) {
		return func(figs []figure) (float64, bool) {
			x, ok1 := last(figs, a+an, conc)
			y, ok2 := last(figs, b+bn, bconc)
			if !ok1 || !ok2 {
				return 0, false
			}
			if p50 {
				return float64(x.p50) / float64(y.p50), true
			}
			return x.perSec() / y.perSec(), true
		}
	}
	for _, d := range durabilities {
		for _, conc := range []int{1, 16, 64} {
			ratio(fmt.Sprintf("decisions/s ÷ no-op, %s, %d in flight", d, conc), pair("submit-", d, conc, "noop-", d, conc, false))
			ratio(fmt.Sprintf("prepared replies/s ÷ no-op, %s, %d in flight", d, conc), pair("prepared-", d, conc, "noop-", d, conc, false))
			ratio(fmt.Sprintf("decisions/s ÷ prepared replies, %s, %d in flight", d, conc), pair("submit-", d, conc, "prepared-", d, conc, false))
			if opa {
				ratio(fmt.Sprintf("decisions/s ÷ OPA, %s, %d in flight", d, conc), pair("submit-", d, conc, "opa", "", conc, false))
			}
		}
		ratio(fmt.Sprintf("p50 ÷ no-op, %s, 1 in flight", d), pair("submit-", d, 1, "noop-", d, 1, true))
		ratio(fmt.Sprintf("prepared reply's p50 ÷ no-op, %s, 1 in flight", d), pair("prepared-", d, 1, "noop-", d, 1, true))
		ratio(fmt.Sprintf("whole loop p50 ÷ its bare hops, %s", d), pair("loop-", d, 1, "loop-hops-", d, 1, true))
	}
}
