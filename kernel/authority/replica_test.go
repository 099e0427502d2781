package authority_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
)

// TestReplicasOnOneDatabase: two kernels sharing one PostgreSQL database
// decide as one. The second follows the first's ledger, honours its
// approvals, redeems a capability once between them, and stops granting
// the moment the first supersedes the task's contract.
func TestReplicasOnOneDatabase(t *testing.T) {
	w := newWorldAt(t, pgtest.Database(t))
	b := w.newKernel(w.openStore())

	w.canonicalTask(task) // proposed, promoted and bound on the first
	env, _ := w.read(task)
	review, err := b.Submit(w.ctx, proposal(task, refund(7400, subject), env))
	if err != nil {
		t.Fatalf("Submit on the second replica: %v", err)
	}
	if review.GetApprovalId() == "" {
		t.Fatalf("the second replica did not ask for approval: %+v", verdictOf(review))
	}
	if _, err := w.k.DecideApproval(w.ctx, "approver", review.GetApprovalId(), true, ""); err != nil {
		t.Fatal(err)
	}
	p := proposal(task, refund(7400, subject), env)
	p.ApprovalID = review.GetApprovalId()
	allow, err := b.Submit(w.ctx, p)
	if err != nil || allow.GetCapability() == nil {
		t.Fatalf("the approval made on the first was not honoured by the second: %+v, %v", verdictOf(allow), err)
	}

	c := w.openCapability(allow.GetCapability())
	const n = 8
	firsts := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		k := []*authority.Kernel{w.k, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := k.Redeem(w.ctx, actionID, proto.CloneOf(allow.GetCapability()), c.GetIdempotencyKey(), agentName)
			if err != nil {
				t.Errorf("Redeem %d: %v", i, err)
			}
			firsts[i] = r.First
		}()
	}
	wg.Wait()
	first, redeems := 0, 0
	for _, f := range firsts {
		if f {
			first++
		}
	}
	for _, e := range w.entries() {
		if e.Kind == "redeem" {
			redeems++
		}
	}
	if first != 1 || redeems != 1 {
		t.Errorf("%d first redemptions and %d redeem entries across replicas, want 1 and 1", first, redeems)
	}

	next := contractItem("CTR-v2", coupledContract(t, task, func(c *contractv1.Contract) { c.Version = "2" }))
	next.SupersedesRef = "CTR-" + task
	w.propose(next)
	w.promote("CTR-v2")
	w.clock.Advance(time.Minute)
	if _, _, err := w.k.SupersedeItem(w.ctx, owner, "CTR-"+task, "CTR-v2"); err != nil {
		t.Fatal(err)
	}
	d, err := b.Submit(w.ctx, proposal(task, refund(1740, subject), env))
	if err != nil {
		t.Fatal(err)
	}
	// The one action is spent; the point is the second reason.
	if diff := cmp.Diff(verdict{"OUTCOME_DENY", []string{"ACTION_COUNT_EXCEEDS_GRANT", "CONTRACT_NOT_CANONICAL"}}, verdictOf(d)); diff != "" || d.GetCapability() != nil {
		t.Errorf("the second replica, after the first superseded the contract (-want +got):\n%s", diff)
	}
	if rep, err := b.VerifyLog(w.ctx, nil); err != nil || !rep.OK {
		t.Errorf("VerifyLog = %+v, %v", rep, err)
	}
}
