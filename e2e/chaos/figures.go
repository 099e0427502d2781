package chaos

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// Figures are what happened during a run, counted as it ran. Read them
// once [Run] has returned.
type Figures struct {
	mu sync.Mutex
	// Loops are every loop's outcome, in the order they ended.
	Loops []Outcome
	// Kills count the SIGKILLs per process: the monkey's at random times
	// (Random) and those of armed failpoints (Failpoint).
	Kills map[string]*Kills
	// Failpoints count, per failpoint name, how often it was armed, how
	// often it fired and how often it was not reached in time.
	Failpoints map[string]*FailpointCount
	// Unexpected are the deaths no kill and no failpoint explains: each
	// names the process and how it ended.
	Unexpected []string
	// Retries count the agents' retries per step.
	Retries map[string]int
	// Reproposals count capabilities that expired unused and were
	// proposed afresh.
	Reproposals int
	// Restarts count the processes started again; RestartTime is their
	// total time until SERVING.
	Restarts    int
	RestartTime time.Duration
}

// Kills of one process.
type Kills struct {
	Random, Failpoint int
}

// FailpointCount is one failpoint's count.
type FailpointCount struct {
	Armed, Fired, NotReached int
}

func newFigures(processes []string) *Figures {
	f := &Figures{Kills: map[string]*Kills{}, Failpoints: map[string]*FailpointCount{}, Retries: map[string]int{}}
	for _, p := range processes {
		f.Kills[p] = &Kills{}
	}
	return f
}

// loopDone records a loop's outcome and returns how many loops are done.
func (f *Figures) loopDone(o Outcome) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Loops = append(f.Loops, o)
	return len(f.Loops)
}

func (f *Figures) retried(step string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Retries[step]++
}

func (f *Figures) reproposed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Reproposals++
}

func (f *Figures) killed(process string, atFailpoint bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if atFailpoint {
		f.Kills[process].Failpoint++
	} else {
		f.Kills[process].Random++
	}
}

// allKilled reports whether every process has been killed at least once.
func (f *Figures) allKilled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.Kills {
		if k.Random+k.Failpoint == 0 {
			return false
		}
	}
	return true
}

func (f *Figures) failpoint(name string) *FailpointCount {
	c, ok := f.Failpoints[name]
	if !ok {
		c = &FailpointCount{}
		f.Failpoints[name] = c
	}
	return c
}

func (f *Figures) armed(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failpoint(name).Armed++
}

func (f *Figures) fired(name string, reached bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if reached {
		f.failpoint(name).Fired++
	} else {
		f.failpoint(name).NotReached++
	}
}

// hasFired reports whether failpoint name has fired at least once.
func (f *Figures) hasFired(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.Failpoints[name]
	return ok && c.Fired > 0
}

func (f *Figures) unexpected(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Unexpected = append(f.Unexpected, what)
}

func (f *Figures) restarted(took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Restarts++
	f.RestartTime += took
}

// totals are the kills and retries so far.
func (f *Figures) totals() (kills, retries int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.Kills {
		kills += k.Random + k.Failpoint
	}
	for _, n := range f.Retries {
		retries += n
	}
	return kills, retries
}

// Failed are the loops that did not finish.
func (f *Figures) Failed() []Outcome {
	var out []Outcome
	for _, o := range f.Loops {
		if o.Err != nil {
			out = append(out, o)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
