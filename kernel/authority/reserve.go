package authority

import (
	"sync"

	"github.com/ambitkernel/ambit/kernel/derive"
)

// reservations hold what decisions in flight outside the writer may use up
// of their tasks' grants. A decision counts every other one in flight on
// its task: its outcome stands only if it is the same whether they are all
// granted or none is, so concurrent proposals never overspend and every
// answer is one some serial order gives. A decision whose outcome depends
// on the others takes its task alone (exclusive): new decisions on the
// task wait, those in flight finish, and it is made with nothing in
// flight.
type reservations struct {
	mu     sync.Mutex
	cond   *sync.Cond
	byTask map[string]*reserved
}

type reserved struct {
	actions   int32
	minor     map[string]int64 // by currency
	exclusive bool
}

func (r *reservations) task(taskID string) *reserved {
	if r.byTask == nil {
		r.byTask = map[string]*reserved{}
		r.cond = sync.NewCond(&r.mu)
	}
	t := r.byTask[taskID]
	if t == nil {
		t = &reserved{minor: map[string]int64{}}
		r.byTask[taskID] = t
	}
	return t
}

// reserve adds one action of minor in currency to the task's reservations
// and returns what the others in flight hold. It waits while a decision
// holds the task alone.
func (r *reservations) reserve(taskID, currency string, minor int64) derive.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.task(taskID)
	for t.exclusive {
		r.cond.Wait()
		t = r.task(taskID)
	}
	others := derive.Usage{Count: t.actions, Minor: t.minor[currency]}
	t.actions++
	t.minor[currency] += minor
	return others
}

// release gives back what reserve took, once the decision is committed
// (its capability then counts in the store's usage) or came to nothing.
func (r *reservations) release(taskID, currency string, minor int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.byTask[taskID]
	t.actions--
	t.minor[currency] -= minor
	r.forget(taskID, t)
}

// alone waits until no decision is in flight on the task and keeps new
// ones waiting until the returned function is called.
func (r *reservations) alone(taskID string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.task(taskID)
	for t.exclusive || t.actions > 0 {
		r.cond.Wait()
		t = r.task(taskID)
	}
	t.exclusive = true
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		t.exclusive = false
		r.forget(taskID, t)
	}
}

// forget drops an idle task's entry and wakes whoever waits on one.
func (r *reservations) forget(taskID string, t *reserved) {
	if t.actions == 0 && !t.exclusive {
		delete(r.byTask, taskID)
	}
	r.cond.Broadcast()
}
