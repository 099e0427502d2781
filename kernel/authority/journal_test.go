package authority_test

import (
	"bytes"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"slices"
	"testing"

	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestJournalRecordsEverything runs a mixed scenario and checks that every
// state change left its entry and that the journal verifies.
func TestJournalRecordsEverything(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	env, _ := w.read(task)
	deny := w.submit(proposal(task, refund(1740, "employee-9"), env))
	review := w.submit(proposal(task, refund(7400, subject), env))
	if _, err := w.k.DecideApproval(w.ctx, "approver", review.GetApprovalId(), true, ""); err != nil {
		t.Fatal(err)
	}
	p := proposal(task, refund(7400, subject), env)
	p.ApprovalID = review.GetApprovalId()
	allow := w.submit(p)
	if allow.GetCapability() == nil {
		t.Fatalf("with approval: %+v", verdictOf(allow))
	}
	c := w.openCapability(allow.GetCapability())
	w.redeemed(allow.GetCapability(), c)
	if _, _, err := w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-1")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.k.RecordReadback(w.ctx, verifierID, w.readback(c, "rb-1", "eff-1", receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED)); err != nil {
		t.Fatal(err)
	}
	brq, err := w.k.BoundaryChange(w.ctx, agentName, task, "raise the limit")
	if err != nil {
		t.Fatal(err)
	}

	es := w.entries()
	type ref struct{ Kind, Ref string }
	var got []ref
	for _, e := range es {
		got = append(got, ref{e.Kind, e.Ref})
	}
	want := []ref{
		{"canon", "CTR-" + task}, // propose
		{"canon", "CTR-" + task}, // promote
		{"task.bind", task},
		{"evidence", "ev-0001"},
		{"decision", deny.GetDecisionId()},
		{"decision", review.GetDecisionId()},
		{"approval.decide", review.GetApprovalId()},
		{"capability", c.GetCapabilityId()},
		{"decision", allow.GetDecisionId()},
		{"redeem", c.GetCapabilityId()},
		{"effect", "eff-1"},
		{"readback", "rb-1"},
		{"canon", brq.Item.GetCanonItemId()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}

	// Receipts are journaled as the exact envelopes answered.
	body := func(kind, r string) *receiptv1.Envelope {
		i := slices.IndexFunc(es, func(e journalEntry) bool { return e.Kind == kind && e.Ref == r })
		if i < 0 {
			t.Fatalf("no %s entry %s", kind, r)
		}
		var env receiptv1.Envelope
		if err := proto.Unmarshal(es[i].Body, &env); err != nil {
			t.Fatalf("%s entry %s: %v", kind, r, err)
		}
		return &env
	}
	for _, d := range []struct {
		kind, ref string
		env       *receiptv1.Envelope
	}{
		{"decision", allow.GetDecisionId(), allow.GetDecisionReceipt()},
		{"decision", deny.GetDecisionId(), deny.GetDecisionReceipt()},
		{"capability", c.GetCapabilityId(), allow.GetCapability()},
		{"evidence", "ev-0001", env},
	} {
		if diff := cmp.Diff(d.env, body(d.kind, d.ref), protocmp.Transform()); diff != "" {
			t.Errorf("%s %s body (-answered +journaled):\n%s", d.kind, d.ref, diff)
		}
	}

	rep, err := w.k.VerifyLog(w.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Entries != int64(len(es)) || rep.Head.String() != rootOf(es) {
		t.Errorf("VerifyLog = %+v, want OK over %d entries", rep, len(es))
	}

	// Paging.
	page, err := w.k.Entries(w.ctx, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range page {
		seqs = append(seqs, e.Seq)
	}
	if diff := cmp.Diff([]int64{3, 4, 5}, seqs); diff != "" {
		t.Errorf("Entries(2, 3) (-want +got):\n%s", diff)
	}

	// Editing an entry behind the kernel's back is detected.
	db, err := sqldb.Open(w.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(w.ctx, `UPDATE journal SET body = ? WHERE seq = 5`, []byte("forged")); err != nil {
		t.Fatal(err)
	}
	rep, err = w.k.VerifyLog(w.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.FirstBad != 5 {
		t.Errorf("VerifyLog after an edit = %+v, want entry 5 named", rep)
	}
}

// TestRevokeStaysInItsTask: rebinding one task must not touch another
// task's capabilities. Both tasks here grant an email with no bound record,
// so their capabilities carry an empty record.
func TestRevokeStaysInItsTask(t *testing.T) {
	w := newWorld(t)
	open := func(c *contractv1.Contract) {
		c.Binding.Subject, c.Binding.StateVersion, c.Binding.Record = "*", "*", nil
		c.Action.Tools = append(c.Action.Tools, emailTool())
		c.Coupling.RequireTrustedCorroboration = false
	}
	w.canonicalTask("mail-a", open)
	w.canonicalTask("mail-b", open)
	email := emailCall("finance@example.com")
	d := w.submit(proposal("mail-a", email))
	if d.GetCapability() == nil {
		t.Fatalf("mail-a: %+v, want ALLOW", verdictOf(d))
	}

	w.propose(contractItem("CTR-mail-b-2", coupledContract(t, "mail-b", open, func(c *contractv1.Contract) { c.Version = "2" })))
	w.promote("CTR-mail-b-2")
	w.bind("mail-b", "CTR-mail-b-2")

	list, err := allCommitments(w.ctx, w.k, "mail-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("mail-a commitments = %v", list)
	}
	if list[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED {
		t.Errorf("mail-a commitment = %v, want AUTHORISED", list[0])
	}
}

// TestReceiptsNameTheirLogIndex: every recorded receipt's answer names the
// leaf it sits at, also when the same receipt is recorded again.
func TestReceiptsNameTheirLogIndex(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	r := w.evidenceReceipt(task)
	env := w.sign(w.evidence, r)
	rec, err := w.k.RecordEvidence(w.ctx, evidenceID, env)
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.k.RecordEvidence(w.ctx, evidenceID, env)
	if err != nil || again.LogIndex != rec.LogIndex {
		t.Fatalf("recorded again at %d (%v), first at %d", again.LogIndex, err, rec.LogIndex)
	}
	d := w.submit(proposal(task, refund(1740, subject), env))
	c := w.openCapability(d.GetCapability())
	w.redeemed(d.GetCapability(), c)
	eff := w.effect(c, "eff-1")
	_, effIndex, err := w.k.RecordEffect(w.ctx, actionID, eff)
	if err != nil {
		t.Fatal(err)
	}
	_, effAgain, err := w.k.RecordEffect(w.ctx, actionID, eff)
	if err != nil || effAgain != effIndex {
		t.Fatalf("effect recorded again at %d (%v), first at %d", effAgain, err, effIndex)
	}
	rb := w.readback(c, "rb-1", "eff-1", receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED)
	_, rbIndex, err := w.k.RecordReadback(w.ctx, verifierID, rb)
	if err != nil {
		t.Fatal(err)
	}
	entries := w.entries()
	for _, tc := range []struct {
		kind  string
		index uint64
		env   *receiptv1.Envelope
	}{{"evidence", rec.LogIndex, env}, {"decision", d.GetLogIndex(), d.GetDecisionReceipt()}, {"effect", effIndex, eff}, {"readback", rbIndex, rb}} {
		e := entries[tc.index]
		body, _ := proto.Marshal(tc.env)
		if e.Kind != tc.kind || !bytes.Equal(e.Body, body) {
			t.Errorf("%s names leaf %d, which holds a %s", tc.kind, tc.index, e.Kind)
		}
	}
}
