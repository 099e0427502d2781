package authority_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
)

// TestTaskBelongsToOneAgent: only the agent a task is bound to may propose,
// read or look at its self-view under it; a binding names an agent.
func TestTaskBelongsToOneAgent(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)
	const other = "agent-b"
	p := proposal(task, refund(1740, subject), env)
	p.Agent = other
	_, err := w.k.Submit(w.ctx, p)
	wantRefusal(t, err, authority.ErrDenied, "TASK_OTHER_AGENT")
	_, err = w.k.SelfView(w.ctx, other, task, []string{"commitments"})
	wantRefusal(t, err, authority.ErrDenied, "TASK_OTHER_AGENT")
	_, err = w.k.AuthorizeRead(w.ctx, authority.Read{Agent: other, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}})
	wantRefusal(t, err, authority.ErrDenied, "TASK_OTHER_AGENT")
	_, err = w.k.BoundaryChange(w.ctx, other, task, "let me in")
	wantRefusal(t, err, authority.ErrDenied, "TASK_OTHER_AGENT")
	if d := w.submit(proposal(task, refund(1740, subject), env)); d.GetCapability() == nil {
		t.Errorf("the task's own agent: %+v", verdictOf(d))
	}

	_, err = w.k.BindTask(w.ctx, "governance", task, "CTR-"+task, "")
	wantRefusal(t, err, authority.ErrInvalid, "INVALID_REQUEST")
	// Rebinding the task to another agent takes the first agent's reach.
	if _, err := w.k.BindTask(w.ctx, "governance", task, "CTR-"+task, other); err != nil {
		t.Fatal(err)
	}
	_, err = w.k.SelfView(w.ctx, agentName, task, []string{"commitments"})
	wantRefusal(t, err, authority.ErrDenied, "TASK_OTHER_AGENT")
}

// TestBoundaryChangeRequestsAreBounded: an identical open request is the
// same request, and an agent cannot open requests without limit.
func TestBoundaryChangeRequestsAreBounded(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	first, err := w.k.BoundaryChange(w.ctx, agentName, task, "add field salary")
	if err != nil {
		t.Fatal(err)
	}
	before := len(w.entries())
	again, err := w.k.BoundaryChange(w.ctx, agentName, task, "add field salary")
	if err != nil || again.Item.GetCanonItemId() != first.Item.GetCanonItemId() {
		t.Fatalf("repeat = %v, %v; want the open request %s", again.Item.GetCanonItemId(), err, first.Item.GetCanonItemId())
	}
	if after := len(w.entries()); after != before {
		t.Errorf("a repeated request journaled %d entries", after-before)
	}
	var limited error
	for i := range 20 {
		if _, err := w.k.BoundaryChange(w.ctx, agentName, task, fmt.Sprintf("raise the limit to %d", i)); err != nil {
			limited = err
			break
		}
	}
	wantRefusal(t, limited, authority.ErrExhausted, "BOUNDARY_REQUEST_LIMITED")
	// A minute later the agent may ask again.
	w.clock.Advance(time.Minute)
	if _, err := w.k.BoundaryChange(w.ctx, agentName, task, "raise the limit once more"); err != nil {
		t.Errorf("after the window: %v", err)
	}
}
