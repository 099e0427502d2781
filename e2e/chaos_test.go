package e2e_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/e2e/chaos"
	"github.com/ambitkernel/ambit/examples/demo"
	"github.com/ambitkernel/ambit/sdk/devstack"
)

// The environment variables of the long crash test (make chaos).
const (
	// chaosLoopsEnv sets the refund loops; a quarter as many support-desk
	// loops run beside them.
	chaosLoopsEnv = "AMBIT_CHAOS_LOOPS"
	// chaosSeedEnv sets the seed (default 1).
	chaosSeedEnv = "AMBIT_CHAOS_SEED"
	// chaosDurabilityEnv sets the stack's durability for the long run
	// (default full); the short one runs at both.
	chaosDurabilityEnv = "AMBIT_CHAOS_DURABILITY"
)

// chaosCapabilityTTL is short on purpose: an agent's retries across a
// restart outlive some capabilities, before or after their redemption,
// as a long outage would.
const chaosCapabilityTTL = 3 * time.Second

// TestChaos is the crash test: agents run full loops of the expense
// refund and the support desk on a task each while the four processes
// are killed with SIGKILL at random times and at their failpoints, and
// restarted; then the audit must find every intended effect exactly once
// in its target with its receipt in the journal, no receipt without its
// effect, no open commitment, every receipt verifying, and the journal
// verifying against the kernel's checkpoints. By default it is short (40
// loops, a few kills); AMBIT_CHAOS_LOOPS=N runs N refund loops and N/4
// desk loops, prints the figures and also requires every failpoint to
// have fired. The short run runs at both durabilities: at normal the
// kernel acknowledges decisions from its store's log file, and a kill
// between that and their copy into the database loses none of them.
func TestChaos(t *testing.T) {
	durabilities := []string{"full", "normal"}
	if os.Getenv(chaosLoopsEnv) != "" {
		durabilities = []string{cmp.Or(os.Getenv(chaosDurabilityEnv), "full")}
	}
	for _, d := range durabilities {
		t.Run(d, func(t *testing.T) { chaosAt(t, d) })
	}
}

func chaosAt(t *testing.T, durability string) {
	o := chaos.Options{RefundLoops: 30, DeskLoops: 10, Workers: 6, Seed: 1, LoopTimeout: 2 * time.Minute,
		MinGap: 100 * time.Millisecond, MaxGap: 500 * time.Millisecond, FailpointWait: 5 * time.Second}
	long := os.Getenv(chaosLoopsEnv) != ""
	bound := 5 * time.Minute
	if long {
		n, err := strconv.Atoi(os.Getenv(chaosLoopsEnv))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of loops", chaosLoopsEnv, os.Getenv(chaosLoopsEnv))
		}
		o.RefundLoops, o.DeskLoops, o.Workers, o.LoopTimeout = n, n/4, 8, 5*time.Minute
		o.MinGap, o.MaxGap, o.FailpointWait = 300*time.Millisecond, 1500*time.Millisecond, 10*time.Second
		o.Progress, o.ProgressEvery = os.Stdout, 100
		bound = 3 * time.Hour
	}
	if v := os.Getenv(chaosSeedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", chaosSeedEnv, v, err)
		}
		o.Seed = seed
	}
	o.CapabilityTTL = chaosCapabilityTTL
	st := startStack(t, devstack.Options{Agents: 4, CapabilityTTL: o.CapabilityTTL, Durability: durability}, demo.ExpenseRefund, demo.Supportdesk)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	rep, err := chaos.Run(ctx, st.Stack, o)
	if err != nil {
		t.Fatal(err)
	}
	reportChaos(ctx, t, st, rep, long)
	if long {
		for _, p := range chaos.Processes {
			for _, name := range chaos.Failpoints[p] {
				if c := rep.Figures.Failpoints[name]; c == nil || c.Fired == 0 {
					t.Errorf("failpoint %s of %s never fired", name, p)
				}
			}
		}
	}
}

// reportChaos stops the stack — stopped, the kernel signs its last
// checkpoint, so the journal is verified whole against every checkpoint
// it signed — then writes the run's table (to standard output when print,
// else to the test log) and fails the test on every problem it found.
func reportChaos(ctx context.Context, t *testing.T, st *stack, rep *chaos.Report, print bool) {
	t.Helper()
	if err := st.Stop(); err != nil {
		t.Errorf("stop the stack: %v", err)
	}
	var err error
	if rep.Ledger, err = chaos.VerifyLedger(ctx, filepath.Join(binDir, "ambitctl"), st.Stack); err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := rep.Write(&table); err != nil {
		t.Fatal(err)
	}
	if print {
		fmt.Print(table.String())
	} else {
		t.Logf("\n%s", table.String())
	}
	for _, p := range rep.Problems() {
		t.Error(p)
	}
}
