package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Processes are the four processes the monkey kills, in start order.
var Processes = []string{devstack.Kernel, devstack.Evidence, devstack.Action, devstack.Verifier}

// Failpoints are the points the monkey arms, per process: every point
// where a crash falls between two durable steps of a loop, or between a
// durable step and the answer that reports it.
var Failpoints = map[string][]string{
	// The kernel between its commit and its reply, for every call a loop
	// makes (and the watcher's reports, which the desk's writes cause).
	devstack.Kernel: {
		"reply:ProposeItem", "reply:PromoteItem", "reply:BindTask", "reply:AuthorizeRead",
		"reply:RecordEvidence", "reply:SubmitProposal", "reply:RedeemCapability",
		"reply:RecordEffect", "reply:RecordReadback", "reply:ReportStateChange",
	},
	// The evidence adapter between reading and recording, between
	// recording and releasing, and around the watcher's reports.
	devstack.Evidence: {
		"call:RecordEvidence", "answer:RecordEvidence", "reply:Read",
		"call:ReportStateChange", "answer:ReportStateChange",
	},
	// The action adapter between redeeming and starting the key, between
	// starting it and the effect, between the effect and its receipt,
	// between the receipt and the kernel's log of it, and before the
	// answer.
	devstack.Action: {
		"call:RedeemCapability", "answer:RedeemCapability", "action.after-start", "action.after-commit",
		"call:RecordEffect", "answer:RecordEffect", "reply:Execute",
	},
	// The verifier between reading and recording, and between recording
	// and answering.
	devstack.Verifier: {"call:RecordReadback", "answer:RecordReadback", "reply:Verify"},
}

// failpointsOf are a process's failpoints: a kernel replica's are the
// kernel's.
func failpointsOf(name string) []string {
	if strings.HasPrefix(name, devstack.Kernel+"-") {
		return Failpoints[devstack.Kernel]
	}
	return Failpoints[name]
}

// restartWait bounds one restart of a process.
const restartWait = 90 * time.Second

// monkey kills the four processes in turn, at random times, and restarts
// each, most times with the next of its failpoints armed, at its first,
// second or third occurrence.
type monkey struct {
	st  *devstack.Stack
	o   Options
	rng *rand.Rand
	fig *Figures
	// points are each process's failpoints in the order they are armed,
	// next the index of the next one.
	points map[string][]string
	next   map[string]int
}

func newMonkey(st *devstack.Stack, o Options, rng *rand.Rand, fig *Figures) *monkey {
	m := &monkey{st: st, o: o, rng: rng, fig: fig, points: map[string][]string{}, next: map[string]int{}}
	for _, p := range o.Processes {
		points := slices.Clone(failpointsOf(p))
		rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
		m.points[p] = points
	}
	return m
}

// run kills and restarts until ctx ends, then leaves every process
// running without a failpoint. An error is a process that did not start
// again: the stack cannot go on.
func (m *monkey) run(ctx context.Context) error {
	var round []string
	for {
		if len(round) == 0 {
			// Every process is killed once per round, in a new order.
			round = slices.Clone(m.o.Processes)
			m.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		name := round[0]
		round = round[1:]
		gap := m.o.MinGap + time.Duration(m.rng.Int64N(int64(m.o.MaxGap-m.o.MinGap)+1))
		if done, err := m.pause(ctx, gap); done || err != nil {
			return err
		}
		m.st.Kill(name)
		m.fig.killed(name, false)
		point := m.nextPoint(name)
		fired, err := m.restart(name, point)
		if err != nil {
			return err
		}
		if point == "" || fired {
			continue
		}
		if err := m.await(ctx, name, point); err != nil {
			return err
		}
	}
}

// nextPoint is the failpoint to arm in name's next start, with its
// occurrence. Until every point of name has fired, every start arms the
// next that has not, so that a short run (a fast stack finishes its loops
// sooner) still reaches each point, and a point disarmed unreached (a
// random kill came first, or the loops ended) is armed again. Then about
// one start in four arms none, so that the random kills also meet
// processes that run clean.
func (m *monkey) nextPoint(name string) string {
	points := m.points[name]
	p := m.unfiredPoint(name)
	if p == "" {
		if m.rng.IntN(4) == 0 {
			return ""
		}
		p = points[m.next[name]%len(points)]
		m.next[name]++
	}
	if n := 1 + m.rng.IntN(3); n > 1 {
		p += fmt.Sprintf("@%d", n)
	}
	return p
}

// pause waits d, restarting any process that dies meanwhile (which no
// kill and no failpoint explains). done is true when ctx ended.
func (m *monkey) pause(ctx context.Context, d time.Duration) (done bool, err error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-timer.C:
			return false, nil
		case name := <-m.st.Died():
			if err := m.unexpected(name); err != nil {
				return false, err
			}
		}
	}
}

// await waits for name to die at its armed failpoint, then restarts it:
// once every process has been killed, with the next point that has not
// fired yet armed, and waits for that one too, so that a run whose loops
// end early still reaches every point; before that, or once all have
// fired, without one (a short run kills every process first). A failpoint
// not reached within FailpointWait (or before the agents are done) is
// disarmed by a kill.
func (m *monkey) await(ctx context.Context, name, point string) error {
	for point != "" {
		base, _, _ := strings.Cut(point, "@")
		died, err := m.awaitDeath(ctx, name)
		if err != nil {
			return err
		}
		if !died {
			m.fig.fired(base, false)
			m.st.Kill(name)
			m.fig.killed(name, false)
			_, err := m.restart(name, "")
			return err
		}
		m.fig.killed(name, true)
		m.fig.fired(base, true)
		point = ""
		if m.fig.allKilled() {
			point = m.unfiredPoint(name)
		}
		fired, err := m.restart(name, point)
		if err != nil {
			return err
		}
		if fired {
			point = ""
		}
	}
	return nil
}

// awaitDeath waits up to FailpointWait, or until ctx ends, for name to
// die; other deaths meanwhile are unexpected.
func (m *monkey) awaitDeath(ctx context.Context, name string) (bool, error) {
	timer := time.NewTimer(m.o.FailpointWait)
	defer timer.Stop()
	for {
		select {
		case died := <-m.st.Died():
			if died == name {
				return true, nil
			}
			if err := m.unexpected(died); err != nil {
				return false, err
			}
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, nil
		}
	}
}

// unfiredPoint is the next of name's failpoints that has not fired yet,
// or "" when all have.
func (m *monkey) unfiredPoint(name string) string {
	points := m.points[name]
	for range points {
		next := points[m.next[name]%len(points)]
		m.next[name]++
		if !m.fig.hasFired(next) {
			return next
		}
	}
	return ""
}

// unexpected records a death that no kill and no failpoint explains and
// starts the process again.
func (m *monkey) unexpected(name string) error {
	m.fig.unexpected(fmt.Sprintf("%s died on its own; see %s", name, m.st.LogPath(name)))
	if !slices.Contains(m.o.Processes, name) {
		return fmt.Errorf("%s died and cannot be restarted; see %s", name, m.st.LogPath(name))
	}
	_, err := m.restart(name, "")
	return err
}

// restart starts name again on its addresses, with point armed when set.
// An armed process may reach its failpoint before it is reported SERVING
// (an agent retrying calls it as soon as it listens): then fired is true
// and it has been started again without the failpoint.
func (m *monkey) restart(name, point string) (fired bool, err error) {
	var env []string
	base, _, _ := strings.Cut(point, "@")
	if point != "" {
		env = []string{service.FailpointEnv + "=" + point}
		m.fig.armed(base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartWait)
	defer cancel()
	start := time.Now()
	err = m.st.Restart(ctx, name, env)
	if err != nil && point != "" {
		died, derr := m.diedAtStart(name)
		if derr != nil {
			return false, derr
		}
		if died {
			m.fig.killed(name, true)
			m.fig.fired(base, true)
			_, err := m.restart(name, "")
			return true, err
		}
	}
	if err != nil {
		return false, fmt.Errorf("restart %s (%s): %w", name, strings.Join(env, " "), err)
	}
	m.fig.restarted(time.Since(start))
	return false, nil
}

// diedAtStart reports whether name died on its own during a start that
// failed, taking its death's report.
func (m *monkey) diedAtStart(name string) (bool, error) {
	timer := time.NewTimer(2 * time.Second)
	defer timer.Stop()
	for {
		select {
		case died := <-m.st.Died():
			if died == name {
				return true, nil
			}
			if err := m.unexpected(died); err != nil {
				return false, err
			}
		case <-timer.C:
			return false, nil
		}
	}
}
