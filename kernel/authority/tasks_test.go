package authority_test

import (
	"testing"

	"github.com/ambitkernel/ambit/kernel/authority"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
)

// TestTasks: every bound task once, in task order, with its current
// binding and its contract's class now; filters and pages compose.
func TestTasks(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask("task-b")
	w.canonicalTask("task-a")
	// Proposed, not promoted: bound but PROVISIONAL.
	w.propose(contractItem("CTR-task-c", coupledContract(t, "task-c")))
	if _, err := w.k.BindTask(w.ctx, "governance", "task-c", "CTR-task-c", "agent-2"); err != nil {
		t.Fatal(err)
	}
	// A second contract for task-a, promoted and bound: the task moves.
	w.propose(contractItem("CTR-task-a-2", coupledContract(t, "task-a")))
	w.promote("CTR-task-a-2")
	w.bind("task-a", "CTR-task-a-2")
	// A contract bound to nothing lists no task.
	w.propose(contractItem("CTR-unbound", coupledContract(t, "task-z")))

	type row struct{ Task, Item, Agent, Class string }
	rows := func(ts []*kernelv1.Task) []row {
		var out []row
		for _, task := range ts {
			out = append(out, row{task.GetTaskId(), task.GetContractItemId(), task.GetAgent(), task.GetContractClass().String()})
			if task.GetContractId() == "" || task.GetValidUntil() == nil {
				t.Errorf("task %s lacks its contract's id or expiry: %v", task.GetTaskId(), task)
			}
		}
		return out
	}
	canonical, provisional := ledgerv1.CanonClass_CANON_CLASS_CANONICAL.String(), ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL.String()
	a := row{"task-a", "CTR-task-a-2", agentName, canonical}
	b := row{"task-b", "CTR-task-b", agentName, canonical}
	c := row{"task-c", "CTR-task-c", "agent-2", provisional}
	tests := []struct {
		name     string
		q        authority.TaskQuery
		want     []row
		wantNext string
	}{
		{"all", authority.TaskQuery{Limit: 100}, []row{a, b, c}, ""},
		{"first page", authority.TaskQuery{Limit: 2}, []row{a, b}, "task-b"},
		{"next page", authority.TaskQuery{After: "task-b", Limit: 2}, []row{c}, ""},
		{"exact page", authority.TaskQuery{Limit: 3}, []row{a, b, c}, ""},
		{"by agent", authority.TaskQuery{Agent: agentName, Limit: 100}, []row{a, b}, ""},
		{"by item", authority.TaskQuery{ItemID: "CTR-task-c", Limit: 100}, []row{c}, ""},
		{"by an item the task left", authority.TaskQuery{ItemID: "CTR-task-a", Limit: 100}, nil, ""},
		{"by an unknown agent", authority.TaskQuery{Agent: "nobody", Limit: 100}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next, err := w.k.Tasks(w.ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rows(got)); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
			if next != tt.wantNext {
				t.Errorf("next = %q, want %q", next, tt.wantNext)
			}
		})
	}
	// A restarted kernel keeps no contract in memory: a page loads its
	// contracts from the journal.
	got, _, err := w.newKernel(w.st).Tasks(w.ctx, authority.TaskQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]row{a, b, c}, rows(got)); diff != "" {
		t.Errorf("tasks after a restart (-want +got):\n%s", diff)
	}
	_, _, err = w.k.Tasks(w.ctx, authority.TaskQuery{})
	wantRefusal(t, err, authority.ErrInvalid, "INVALID_REQUEST")
}
