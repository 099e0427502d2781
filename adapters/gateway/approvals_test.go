package gateway_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ambitkernel/ambit/adapters/gateway"
)

func TestApprovals(t *testing.T) {
	type step struct {
		op                string // remember, used, forget, lookup
		call, id, request string
		want              gateway.Remembered
	}
	for _, tc := range []struct {
		name  string
		max   int
		steps []step
	}{
		{name: "a REVIEW's approval is cited by the same call", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "lookup", call: "c1", want: gateway.Remembered{ID: "apr-1"}},
			{op: "lookup", call: "c2"},
		}},
		{name: "a newer REVIEW replaces the approval", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "remember", call: "c1", id: "apr-2"},
			{op: "lookup", call: "c1", want: gateway.Remembered{ID: "apr-2"}},
		}},
		{name: "a used approval remembers the request that used it", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "used", call: "c1", id: "apr-1", request: "req-1"},
			{op: "lookup", call: "c1", want: gateway.Remembered{ID: "apr-1", UsedBy: "req-1"}},
		}},
		{name: "using an approval that was replaced changes nothing", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "remember", call: "c1", id: "apr-2"},
			{op: "used", call: "c1", id: "apr-1", request: "req-1"},
			{op: "lookup", call: "c1", want: gateway.Remembered{ID: "apr-2"}},
		}},
		{name: "forgetting drops only the named approval and starts a new round", steps: []step{
			{op: "remember", call: "c1", id: "apr-2"},
			{op: "forget", call: "c1", id: "apr-1"},
			{op: "lookup", call: "c1", want: gateway.Remembered{ID: "apr-2"}},
			{op: "forget", call: "c1", id: "apr-2"},
			{op: "lookup", call: "c1", want: gateway.Remembered{Round: 1}},
			{op: "remember", call: "c1", id: "apr-3"},
			{op: "used", call: "c1", id: "apr-3", request: "req-3"},
			{op: "forget", call: "c1", id: "apr-3"},
			{op: "lookup", call: "c1", want: gateway.Remembered{Round: 2}},
		}},
		{name: "the oldest call is forgotten first", max: 2, steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "remember", call: "c2", id: "apr-2"},
			{op: "remember", call: "c2", id: "apr-3"}, // not a new call
			{op: "remember", call: "c3", id: "apr-4"},
			{op: "lookup", call: "c1"},
			{op: "lookup", call: "c2", want: gateway.Remembered{ID: "apr-3"}},
			{op: "lookup", call: "c3", want: gateway.Remembered{ID: "apr-4"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := gateway.NewApprovals(tc.max)
			if tc.max == 0 {
				a = gateway.NewApprovals(gateway.DefaultApprovalMemory)
			}
			for i, s := range tc.steps {
				switch s.op {
				case "remember":
					a.Remember(s.call, s.id)
				case "used":
					a.Used(s.call, s.id, s.request)
				case "forget":
					a.Forget(s.call, s.id)
				case "lookup":
					if got := a.Lookup(s.call); got != s.want {
						t.Errorf("step %d: Lookup(%s) = %+v, want %+v", i, s.call, got, s.want)
					}
				}
			}
		})
	}
}

// TestApprovalsConcurrent races calls that remember, use and forget
// approvals against each other. With room for every call, each keeps
// its own approval; with less, the memory never holds more than its
// bound.
func TestApprovalsConcurrent(t *testing.T) {
	const workers, calls, perWorker = 8, 300, 32
	for _, bound := range []int{workers * perWorker, perWorker} {
		t.Run(fmt.Sprintf("bound %d", bound), func(t *testing.T) {
			room := bound >= workers*perWorker
			a := gateway.NewApprovals(bound)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range calls {
						call := fmt.Sprintf("w%d-c%d", w, i%perWorker)
						id := fmt.Sprintf("apr-%d-%d", w, i)
						a.Remember(call, id)
						if got := a.Lookup(call); room && got.ID != id {
							t.Errorf("%s: remembered %s, looked up %+v", call, id, got)
						}
						a.Used(call, id, "req-"+id)
						if got := a.Lookup(call); room && (got.ID != id || got.UsedBy != "req-"+id) {
							t.Errorf("%s: used %s, looked up %+v", call, id, got)
						}
						if i%3 == 0 {
							a.Forget(call, id)
						}
					}
				})
			}
			wg.Wait()
			held := 0
			for w := range workers {
				for i := range perWorker {
					if a.Lookup(fmt.Sprintf("w%d-c%d", w, i)) != (gateway.Remembered{}) {
						held++
					}
				}
			}
			if held > bound || held == 0 {
				t.Errorf("%d approvals held, bound %d", held, bound)
			}
		})
	}
}

func TestStillPending(t *testing.T) {
	for msg, want := range map[string]bool{
		`approval "apr-1" is PENDING`:   true,
		`approval "apr-1" is REJECTED`:  false,
		`approval "apr-1" is CONSUMED`:  false,
		`approval "apr-1" is CANCELLED`: false,
		`approval "apr-1" is PENDINGX`:  false,
		``:                              false,
	} {
		if got := gateway.StillPending(msg); got != want {
			t.Errorf("StillPending(%q) = %v", msg, got)
		}
	}
}
