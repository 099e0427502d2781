package gateway_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ambitkernel/ambit/adapters/gateway"
)

func TestApprovals(t *testing.T) {
	type step struct {
		op                 string // remember, used, forget, lookup
		call, id, request  string
		wantID, wantUsedBy string
	}
	for _, tc := range []struct {
		name  string
		max   int
		steps []step
	}{
		{name: "a REVIEW's approval is cited by the same call", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "lookup", call: "c1", wantID: "apr-1"},
			{op: "lookup", call: "c2"},
		}},
		{name: "a newer REVIEW replaces the approval", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "remember", call: "c1", id: "apr-2"},
			{op: "lookup", call: "c1", wantID: "apr-2"},
		}},
		{name: "a used approval remembers the request that used it", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "used", call: "c1", id: "apr-1", request: "req-1"},
			{op: "lookup", call: "c1", wantID: "apr-1", wantUsedBy: "req-1"},
		}},
		{name: "using an approval that was replaced changes nothing", steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "remember", call: "c1", id: "apr-2"},
			{op: "used", call: "c1", id: "apr-1", request: "req-1"},
			{op: "lookup", call: "c1", wantID: "apr-2"},
		}},
		{name: "forgetting drops only the named approval", steps: []step{
			{op: "remember", call: "c1", id: "apr-2"},
			{op: "forget", call: "c1", id: "apr-1"},
			{op: "lookup", call: "c1", wantID: "apr-2"},
			{op: "forget", call: "c1", id: "apr-2"},
			{op: "lookup", call: "c1"},
		}},
		{name: "the oldest call is forgotten first", max: 2, steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "remember", call: "c2", id: "apr-2"},
			{op: "remember", call: "c2", id: "apr-3"}, // not a new call
			{op: "remember", call: "c3", id: "apr-4"},
			{op: "lookup", call: "c1"},
			{op: "lookup", call: "c2", wantID: "apr-3"},
			{op: "lookup", call: "c3", wantID: "apr-4"},
		}},
		{name: "a forgotten call frees its place", max: 2, steps: []step{
			{op: "remember", call: "c1", id: "apr-1"},
			{op: "remember", call: "c2", id: "apr-2"},
			{op: "forget", call: "c1", id: "apr-1"},
			{op: "remember", call: "c3", id: "apr-3"},
			{op: "lookup", call: "c2", wantID: "apr-2"},
			{op: "lookup", call: "c3", wantID: "apr-3"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := gateway.NewApprovals(max(tc.max, 16))
			if tc.max > 0 {
				a = gateway.NewApprovals(tc.max)
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
					id, usedBy := a.Lookup(s.call)
					if id != s.wantID || usedBy != s.wantUsedBy {
						t.Errorf("step %d: Lookup(%s) = %q, %q; want %q, %q", i, s.call, id, usedBy, s.wantID, s.wantUsedBy)
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
						if got, _ := a.Lookup(call); room && got != id {
							t.Errorf("%s: remembered %s, looked up %q", call, id, got)
						}
						a.Used(call, id, "req-"+id)
						if got, usedBy := a.Lookup(call); room && (got != id || usedBy != "req-"+id) {
							t.Errorf("%s: used %s, looked up %q used by %q", call, id, got, usedBy)
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
					if id, _ := a.Lookup(fmt.Sprintf("w%d-c%d", w, i)); id != "" {
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
