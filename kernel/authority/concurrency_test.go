package authority_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ambitkernel/ambit/kernel/authority"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
)

// TestConcurrentSubmitGrantsOnce: sixteen agents race the same ALLOW-able
// proposal for a task that grants one action; exactly one gets a
// capability.
func TestConcurrentSubmitGrantsOnce(t *testing.T) {
	const n = 16
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)

	results, outcomes := raceSubmit(t, w, n, func() authority.Proposal {
		return proposal(task, refund(1740, subject), proto.CloneOf(env))
	}, "ACTION_COUNT_EXCEEDS_GRANT")
	caps := 0
	for _, d := range results {
		if d.Capability != nil {
			caps++
		}
	}
	if diff := cmp.Diff(map[string]int{"OUTCOME_ALLOW": 1, "OUTCOME_DENY": n - 1}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if caps != 1 {
		t.Errorf("%d capabilities issued, want 1", caps)
	}
	list, err := allCommitments(w.ctx, w.k, task)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("%d commitments stored, want 1", len(list))
	}
	if rep, err := w.k.VerifyLog(w.ctx, nil); err != nil || !rep.OK {
		t.Errorf("VerifyLog = %+v, %v", rep, err)
	}
}

// TestConcurrentRedeemOnce: the same capability redeemed concurrently is
// first exactly once.
func TestConcurrentRedeemOnce(t *testing.T) {
	const n = 16
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task)

	firsts := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := w.k.Redeem(w.ctx, actionID, proto.CloneOf(d.GetCapability()), c.GetIdempotencyKey(), agentName)
			firsts[i], errs[i] = r.First, err
			if err == nil && r.Commitment.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED {
				errs[i] = fmt.Errorf("commitment %s", r.Commitment.GetStatus())
			}
		}()
	}
	wg.Wait()
	first := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Redeem %d: %v", i, errs[i])
		}
		if firsts[i] {
			first++
		}
	}
	if first != 1 {
		t.Errorf("%d first redemptions, want 1", first)
	}
	redeems := 0
	for _, e := range w.entries() {
		if e.Kind == "redeem" {
			redeems++
		}
	}
	if redeems != 1 {
		t.Errorf("%d redeem entries, want 1", redeems)
	}
}

// TestConcurrentStateChangeAndSubmit: proposals racing a state change
// never leave a capability issued at the old version outstanding.
func TestConcurrentStateChangeAndSubmit(t *testing.T) {
	const n = 16
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) { c.Action.MaxActions = n })
	env, _ := w.read(task)
	changed := w.sign(w.evidence, w.evidenceReceipt(task, func(r *receiptv1.EvidenceReceipt) { r.StateVersion = version43 }))

	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = w.k.Submit(w.ctx, proposal(task, refund(100, subject), proto.CloneOf(env)))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, errs[n] = w.k.RecordEvidence(w.ctx, evidenceID, changed)
	}()
	wg.Wait()
	for i, err := range errs[:n] {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	// The change is noted; the read itself is refused to the stale task.
	wantRefusal(t, errs[n], authority.ErrStale, "STATE_VERSION_CHANGED")
	list, err := allCommitments(w.ctx, w.k, task)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED {
			t.Errorf("capability %s is %s after the state change", c.GetCapabilityId(), c.GetStatus())
		}
	}
}

// TestLedgerFollowsCommitsUnderRefusals races refused ledger requests (an
// agent asking for a boundary change on a task bound to someone else)
// against promotions and supersessions. Once SupersedeItem has returned, the
// old item must read DEPRECATED and a proposal under it must not be
// allowed: a refusal must never rebuild the ledger over a committed
// transition.
func TestLedgerFollowsCommitsUnderRefusals(t *testing.T) {
	const rounds = 12
	w := newWorld(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Refused: the task is not bound to this agent, or not at all.
				_, _ = w.k.BoundaryChange(w.ctx, "intruder", task, "add field salary")
				_, _ = w.k.PromoteItem(w.ctx, "intruder", "CTR-nope")
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	for i := range rounds {
		taskID := fmt.Sprintf("%s-%d", task, i)
		old := w.canonicalTask(taskID).Item.GetCanonItemId()
		next := contractItem(old+"-v2", coupledContract(t, taskID, func(c *contractv1.Contract) { c.Version = "2" }))
		next.SupersedesRef = old
		w.propose(next)
		w.promote(next.GetCanonItemId())
		env, _ := w.read(taskID)
		if _, _, err := w.k.SupersedeItem(w.ctx, owner, old, next.GetCanonItemId()); err != nil {
			t.Fatalf("round %d: SupersedeItem: %v", i, err)
		}
		if got := w.item(old).Class; got != ledgerv1.CanonClass_CANON_CLASS_DEPRECATED {
			t.Fatalf("round %d: %s is %s after its supersession returned, want DEPRECATED", i, old, got)
		}
		d := w.submit(proposal(taskID, refund(1740, subject), env))
		if d.GetCapability() != nil || verdictOf(d).Outcome == "OUTCOME_ALLOW" {
			t.Fatalf("round %d: a proposal under the superseded %s was allowed: %v", i, old, verdictOf(d))
		}
	}
}

// TestConcurrentSubmitWithinCumulativeGrant: proposals racing on one task
// with room for three of them: exactly three are granted, and every other
// is denied for exactly the reason a serial order gives.
func TestConcurrentSubmitWithinCumulativeGrant(t *testing.T) {
	const n = 24
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) {
		c.Action.MaxActions = 1 << 20
		c.Action.MaxCumulativeAmount = &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 3 * 1000}
		c.Action.ApprovalOver = proto.Clone(c.Action.MaxAmount).(*contractv1.Money)
	})
	env, _ := w.read(task)
	_, outcomes := raceSubmit(t, w, n, func() authority.Proposal {
		return proposal(task, refund(1000, subject), proto.CloneOf(env))
	}, "CUMULATIVE_AMOUNT_EXCEEDS_GRANT")
	if diff := cmp.Diff(map[string]int{"OUTCOME_ALLOW": 3, "OUTCOME_DENY": n - 3}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	list, err := allCommitments(w.ctx, w.k, task)
	if err != nil || len(list) != 3 {
		t.Errorf("%d commitments stored (%v), want 3", len(list), err)
	}
}

// raceSubmit submits n proposals at once, each its own messages as separate
// RPCs would be, and counts their outcomes; every DENY must give exactly
// the reason denyCode. Every decision receipt, and every capability, opens
// with the kernel's key as its own decision's, whichever of the others it
// was signed with.
func raceSubmit(t *testing.T, w *world, n int, p func() authority.Proposal, denyCode string) ([]*authority.Decided, map[string]int) {
	t.Helper()
	results := make([]*authority.Decided, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = w.k.Submit(w.ctx, p()) })
	}
	wg.Wait()
	outcomes := map[string]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Submit %d: %v", i, errs[i])
		}
		var dr receiptv1.DecisionReceipt
		if err := w.keys.Open(results[i].GetDecisionReceipt(), kernelKey, &dr); err != nil || dr.GetDecisionId() != results[i].GetDecisionId() {
			t.Errorf("decision %d: receipt opens as %q (%v), want %q", i, dr.GetDecisionId(), err, results[i].GetDecisionId())
		}
		if env := results[i].GetCapability(); env != nil {
			if c := w.openCapability(env); c.GetDecisionId() != results[i].GetDecisionId() {
				t.Errorf("decision %d: capability names decision %q", i, c.GetDecisionId())
			}
		}
		v := verdictOf(results[i])
		outcomes[v.Outcome]++
		if v.Outcome == "OUTCOME_DENY" {
			if diff := cmp.Diff([]string{denyCode}, v.Codes); diff != "" {
				t.Errorf("DENY %d reasons (-want +got):\n%s", i, diff)
			}
		}
	}
	return results, outcomes
}

// TestChangeBetweenReadAndAppend: what a decision read changes after it
// read it and before the decision is appended (the record's state, or the
// ledger). The writer sees the moved stamp and the decision is made again,
// on the new state: no capability at the old version is left outstanding.
func TestChangeBetweenReadAndAppend(t *testing.T) {
	cases := []struct {
		name    string
		change  func(t *testing.T, w *world, k *authority.Kernel)
		allowed bool
	}{
		{"record state", func(t *testing.T, w *world, k *authority.Kernel) {
			changed := w.sign(w.evidence, w.evidenceReceipt(task, func(r *receiptv1.EvidenceReceipt) { r.StateVersion = version43 }))
			_, err := k.RecordEvidence(w.ctx, evidenceID, changed)
			wantRefusal(t, err, authority.ErrStale, "STATE_VERSION_CHANGED")
		}, false},
		{"ledger", func(t *testing.T, w *world, k *authority.Kernel) {
			if _, err := k.ProposeItem(w.ctx, owner, contractItem("CTR-other", coupledContract(t, "task-other"))); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.canonicalTask(task)
			env, _ := w.read(task)
			k, decisions := interrupted(t, w, func(k *authority.Kernel) { c.change(t, w, k) })
			d, err := k.Submit(w.ctx, proposal(task, refund(1740, subject), env))
			if err != nil {
				t.Fatal(err)
			}
			if n := decisions.Load(); n != 2 {
				t.Errorf("the decision was made %d times, want twice", n)
			}
			if got := d.GetCapability() != nil; got != c.allowed {
				t.Errorf("capability issued: %v, want %v: %+v", got, c.allowed, verdictOf(d))
			}
			list, err := allCommitments(w.ctx, k, task)
			if err != nil {
				t.Fatal(err)
			}
			outstanding := 0
			for _, cm := range list {
				if cm.GetStatus() == agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED {
					outstanding++
				}
			}
			if want := map[bool]int{true: 1}[c.allowed]; outstanding != want {
				t.Errorf("%d capabilities outstanding, want %d", outstanding, want)
			}
		})
	}
}

// interrupted is a kernel over w's store that runs change once, in the
// first decision, after it has read and evaluated and before it is
// appended (when the decision names itself); decisions counts the
// decisions made.
func interrupted(t *testing.T, w *world, change func(k *authority.Kernel)) (*authority.Kernel, *atomic.Int32) {
	t.Helper()
	if !w.st.Exclusive() {
		// A store other replicas write decides inside the writer, where
		// change could not run: its own update would wait for the one
		// holding the writer.
		t.Skip("decisions are made outside the writer only on an exclusive store")
	}
	o := w.options(w.st)
	var k *authority.Kernel
	decisions := new(atomic.Int32)
	newID := o.NewID
	o.NewID = func(prefix string) string {
		if prefix == "dec-" && decisions.Add(1) == 1 {
			change(k)
		}
		return newID(prefix)
	}
	k, err := authority.New(w.ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return k, decisions
}

// sameRequest is a world whose task has room for many decisions, and a
// proposal on it with request id id. Calls with the same request id must
// not depend on one another's outcome: a decision that depends on one in
// flight waits for it to finish, and a call that waits for another's
// answer would never let it.
func sameRequest(t *testing.T, id string) (*world, authority.Proposal) {
	t.Helper()
	w := newWorld(t)
	w.canonicalTask(task, func(c *contractv1.Contract) {
		c.Action.MaxActions = 100
		c.Action.MaxCumulativeAmount = nil
	})
	env, _ := w.read(task)
	p := proposal(task, refund(1740, subject), env)
	p.RequestID = id
	return w, p
}

// TestSameRequestBetweenReadAndAppend: the same request id is answered by
// another call while the first is being decided. The first finds the
// answer when it appends and returns it: one decision, one capability.
func TestSameRequestBetweenReadAndAppend(t *testing.T) {
	w, p := sameRequest(t, "req-1")
	var other *authority.Decided
	k, _ := interrupted(t, w, func(k *authority.Kernel) {
		var err error
		if other, err = k.Submit(w.ctx, p); err != nil {
			t.Errorf("the other call: %v", err)
		}
	})
	d, err := k.Submit(w.ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if other.GetRepeated() || !d.GetRepeated() || d.GetDecisionId() != other.GetDecisionId() {
		t.Errorf("answers %s (repeated %v) and %s (repeated %v), want the other call's decision, repeated to the first",
			other.GetDecisionId(), other.GetRepeated(), d.GetDecisionId(), d.GetRepeated())
	}
	if list, err := allCommitments(w.ctx, k, task); err != nil || len(list) != 1 {
		t.Errorf("%d commitments (%v), want 1", len(list), err)
	}
}

// TestSameRequestConcurrently: one request id submitted by many callers
// at once, their decisions acknowledged from the log file, is decided
// once: every caller gets that decision, all but one as a repeat, and the
// task holds one capability.
func TestSameRequestConcurrently(t *testing.T) {
	w, p := sameRequest(t, "req-many")
	const callers = 16
	answers := make([]*authority.Decided, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { answers[i], errs[i] = w.k.Submit(w.ctx, p) })
	}
	wg.Wait()
	firsts := 0
	for i, d := range answers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if d.GetDecisionId() != answers[0].GetDecisionId() {
			t.Fatalf("callers got decisions %s and %s", answers[0].GetDecisionId(), d.GetDecisionId())
		}
		if !d.GetRepeated() {
			firsts++
		}
	}
	if firsts != 1 {
		t.Errorf("%d answers not repeated, want the one that decided", firsts)
	}
	if list, err := allCommitments(w.ctx, w.k, task); err != nil || len(list) != 1 {
		t.Errorf("%d commitments (%v), want 1", len(list), err)
	}
}
