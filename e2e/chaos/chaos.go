package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Options configure a run. The zero value of a duration takes its
// default.
type Options struct {
	// RefundLoops and DeskLoops are how many tasks of each example run a
	// full loop: one refund of one claim, one credit on one ticket.
	RefundLoops, DeskLoops int
	// Workers run loops side by side, each as one of the stack's agents
	// in turn (default 8).
	Workers int
	// Processes are those the monkey kills (default [Processes]); a kernel
	// replica ("kernel-2") is armed with the kernel's failpoints.
	Processes []string
	// Seed makes the monkey's choices, the amounts and the order of the
	// loops repeatable; the timing is not.
	Seed uint64
	// MinGap and MaxGap bound the monkey's pause before each kill
	// (defaults 300ms and 1.5s).
	MinGap, MaxGap time.Duration
	// FailpointWait is how long an armed failpoint may take to be reached
	// before its process is killed anyway (default 10s).
	FailpointWait time.Duration
	// LoopTimeout bounds one loop, retries included (default 5m).
	LoopTimeout time.Duration
	// CallTimeout bounds each call of a loop (default 10s).
	CallTimeout time.Duration
	// CapabilityTTL is the stack's, for the report.
	CapabilityTTL time.Duration
	// Progress, when set, receives a line every ProgressEvery loops.
	Progress      io.Writer
	ProgressEvery int
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if len(o.Processes) == 0 {
		o.Processes = Processes
	}
	if o.MinGap <= 0 {
		o.MinGap = 300 * time.Millisecond
	}
	if o.MaxGap <= o.MinGap {
		o.MaxGap = max(o.MinGap, 1500*time.Millisecond)
	}
	if o.FailpointWait <= 0 {
		o.FailpointWait = 10 * time.Second
	}
	if o.LoopTimeout <= 0 {
		o.LoopTimeout = 5 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 100
	}
}

// Report is what a run found.
type Report struct {
	Options Options
	Figures *Figures
	Audit   *Audit
	// Ledger is `ambitctl ledger verify` on the final journal, once
	// [VerifyLedger] has run.
	Ledger *Ledger
	// Elapsed is the loops' and the monkey's time; Total adds the audit.
	Elapsed, Total time.Duration
}

// run is one run's shared state.
type run struct {
	o     Options
	st    *devstack.Stack
	gov   kernelv1.GovernanceServiceClient
	fig   *Figures
	start time.Time
}

// Run drives a running stack that has both examples (the support desk
// only when DeskLoops > 0): it adds a claim per refund loop and a ticket
// per desk loop to the examples' data, runs every loop in Workers
// goroutines while the monkey kills and restarts the four processes, and
// once the agents are done and every process runs again without a
// failpoint, audits the targets, the kernel's journal and its
// commitments. An error means the run could not be carried out (a process
// that would not start again, say); what the run found is in the report.
func Run(ctx context.Context, st *devstack.Stack, o Options) (*Report, error) {
	o.defaults()
	begin := time.Now()
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	loops, err := plan(ctx, st, o, rng)
	if err != nil {
		return nil, err
	}
	conn, err := st.Conn(ctx, st.Kernel.Governance, devstack.PolicyOwner)
	if err != nil {
		return nil, err
	}
	var agents []*client.Agent
	defer func() {
		for _, a := range agents {
			_ = a.Close()
		}
	}()
	for _, name := range st.Agents {
		a, err := st.Agent(ctx, name)
		if err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	r := &run{o: o, st: st, gov: kernelv1.NewGovernanceServiceClient(conn), fig: newFigures(o.Processes), start: time.Now()}

	monkeyCtx, stopMonkey := context.WithCancel(ctx)
	defer stopMonkey()
	// The agents stop too when the monkey fails: a process that does not
	// start again would only make them retry until their loops time out.
	loopsCtx, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	m := newMonkey(st, o, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), r.fig)
	monkeyDone := make(chan error, 1)
	go func() {
		err := m.run(monkeyCtx)
		if err != nil {
			stopLoops()
		}
		monkeyDone <- err
	}()

	queue := make(chan loop)
	var wg sync.WaitGroup
	for w := range o.Workers {
		i := w % len(agents)
		wg.Go(func() {
			for l := range queue {
				r.do(loopsCtx, agents[i], st.Agents[i], l)
			}
		})
	}
	for _, l := range loops {
		select {
		case queue <- l:
		case err := <-monkeyDone:
			// The monkey stopped early: a process would not start again.
			close(queue)
			wg.Wait()
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	close(queue)
	wg.Wait()
	stopMonkey()
	if err := <-monkeyDone; err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	elapsed := time.Since(begin)
	audit, err := audit(ctx, st, r.gov, r.fig)
	if err != nil {
		return nil, fmt.Errorf("chaos: audit: %w", err)
	}
	return &Report{Options: o, Figures: r.fig, Audit: audit, Elapsed: elapsed, Total: time.Since(begin)}, nil
}

// progress prints a line every ProgressEvery loops.
func (r *run) progress(done int) {
	if r.o.Progress == nil || done%r.o.ProgressEvery != 0 {
		return
	}
	kills, retries := r.fig.totals()
	fmt.Fprintf(r.o.Progress, "chaos: %d loops done in %s, %d kills, %d retries\n", done, time.Since(r.start).Round(time.Second), kills, retries)
}

// plan adds the loops' records to the examples' data and returns the
// loops, refund and desk loops interleaved at random.
func plan(ctx context.Context, st *devstack.Stack, o Options, rng *rand.Rand) ([]loop, error) {
	if o.RefundLoops < 0 || o.DeskLoops < 0 || o.RefundLoops+o.DeskLoops == 0 {
		return nil, errors.New("chaos: no loops to run")
	}
	var loops []loop
	for i := range o.RefundLoops {
		// Below the contract's approval threshold (GBP 50.00): no review.
		loops = append(loops, loop{example: demo.ExpenseRefund, task: fmt.Sprintf("chaos-refund-%05d", i),
			record: fmt.Sprintf("CX-%05d", i), minor: 100 + rng.Int64N(4800)})
	}
	for i := range o.DeskLoops {
		// At most the contract's approval threshold (GBP 20.00).
		loops = append(loops, loop{example: demo.Supportdesk, task: fmt.Sprintf("chaos-desk-%05d", i),
			record: fmt.Sprintf("TX-%05d", i), minor: 100 + rng.Int64N(1900)})
	}
	rng.Shuffle(len(loops), func(i, j int) { loops[i], loops[j] = loops[j], loops[i] })
	if err := seedClaims(ctx, st.DataDir, loops); err != nil {
		return nil, err
	}
	if o.DeskLoops > 0 {
		if _, ok := st.Example(demo.Supportdesk); !ok {
			return nil, errors.New("chaos: desk loops need the supportdesk example")
		}
		if err := seedTickets(ctx, st.DataDir, loops); err != nil {
			return nil, err
		}
	}
	return loops, nil
}

// seedClaims adds a claim of the demo claimant per refund loop to the
// example's claims.db, at the state version the contract template binds
// (claims-v42).
func seedClaims(ctx context.Context, dataDir string, loops []loop) error {
	return insert(ctx, filepath.Join(dataDir, "claims.db"), loops, demo.ExpenseRefund,
		`INSERT INTO claims (claim_id, claimant_id, receipt_total, receipt_date, cost_centre, salary, medical_notes,
			bank_account, disciplinary_notes, row_version) VALUES (?, ?, ?, '2026-03-02', 'CC-410 Field Sales', 'FAKE', 'FAKE', 'FAKE', 'FAKE', 42)`,
		func(l loop) []any {
			return []any{l.record, demo.Claimant, fmt.Sprintf("%d.%02d", l.minor/100, l.minor%100)}
		})
}

// seedTickets adds an open ticket of the demo customer per desk loop to
// the desk's database.
func seedTickets(ctx context.Context, dataDir string, loops []loop) error {
	return insert(ctx, filepath.Join(dataDir, "desk.db"), loops, demo.Supportdesk,
		`INSERT INTO tickets (ticket_id, customer_id, subject, status, priority, credit_total_minor, version, closed_by)
			VALUES (?, ?, 'Late delivery', 'open', 'normal', 0, 1, '')`,
		func(l loop) []any { return []any{l.record, demo.Customer} })
}

func insert(ctx context.Context, path string, loops []loop, example, query string, args func(loop) []any) error {
	db, err := sqldb.Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("chaos: seed %s: %w", path, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, l := range loops {
		if l.example != example {
			continue
		}
		if _, err := tx.ExecContext(ctx, query, args(l)...); err != nil {
			return fmt.Errorf("chaos: seed %s: %s: %w", path, l.record, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("chaos: seed %s: %w", path, err)
	}
	return nil
}
