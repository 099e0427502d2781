package authority_test

import (
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/authority"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
)

// TestSidecarServesOneAgent: a sidecar bound to another agent than the
// task's is refused every adapter call that names the task or its
// capability, and the refusals journal nothing; bound to the task's own
// agent, the same calls go through.
func TestSidecarServesOneAgent(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task) // through shared sidecars
	evidence := w.sign(w.evidence, w.evidenceReceipt(task))
	effect := w.effect(c, "eff-1")
	readback := w.readback(c, "rb-1", "eff-1", receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED)
	read := authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}}

	w.serves = authority.Serves{evidenceID: "agent-2", actionID: "agent-2", verifierID: "agent-2"}
	w.k = w.newKernel(w.st)
	before := len(w.entries())
	tests := []struct {
		name   string
		call   func() error
		reason string
	}{
		{"authorise a read", func() error {
			r := read
			r.Sidecar = evidenceID
			_, err := w.k.AuthorizeRead(w.ctx, r)
			return err
		}, "TASK_OTHER_AGENT"},
		{"record evidence", func() error { _, err := w.k.RecordEvidence(w.ctx, evidenceID, evidence); return err }, "TASK_OTHER_AGENT"},
		{"redeem with the holder named", func() error {
			_, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
			return err
		}, "CAPABILITY_NOT_HOLDER"},
		{"redeem with no holder named", func() error {
			_, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), "")
			return err
		}, "CAPABILITY_NOT_HOLDER"},
		{"record an effect", func() error { _, _, err := w.k.RecordEffect(w.ctx, actionID, effect); return err }, "CAPABILITY_NOT_HOLDER"},
		{"record a readback", func() error { _, _, err := w.k.RecordReadback(w.ctx, verifierID, readback); return err }, "CAPABILITY_NOT_HOLDER"},
		{"report a state change of another agent's record", func() error {
			_, err := w.k.ReportStateChange(w.ctx, evidenceID, claimsDB, claimKey, version43, w.clock.Now())
			return err
		}, "RECORD_OUTSIDE_BINDING"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			wantRefusal(t, err, authority.ErrDenied, tt.reason)
			if !strings.Contains(err.Error(), `serves agent "agent-2"`) {
				t.Errorf("refusal %q does not say whom the sidecar serves", err)
			}
		})
	}
	if after := len(w.entries()); after != before {
		t.Fatalf("refusals journaled %d entries", after-before)
	}
	// Nor does it see which records another agent's tasks watch.
	if watched, err := w.k.WatchedRecords(w.ctx, evidenceID); err != nil || len(watched) != 0 {
		t.Errorf("WatchedRecords for agent-2's sidecar = %v, %v; want none of the other agent's", watched, err)
	}
	if watched, err := w.k.WatchedRecords(w.ctx, "evidence-shared"); err != nil || len(watched) != 1 || watched[0].GetRecordKey() != claimKey {
		t.Errorf("WatchedRecords for a shared sidecar = %v, %v; want %s", watched, err, claimKey)
	}

	// Bound to the task's own agent, the sidecars work as shared ones do.
	w.serves = authority.Serves{evidenceID: agentName, actionID: agentName, verifierID: agentName}
	w.k = w.newKernel(w.st)
	r := read
	r.Sidecar = evidenceID
	if _, err := w.k.AuthorizeRead(w.ctx, r); err != nil {
		t.Fatalf("AuthorizeRead by the agent's own sidecar: %v", err)
	}
	if _, err := w.k.RecordEvidence(w.ctx, evidenceID, evidence); err != nil {
		t.Fatalf("RecordEvidence by the agent's own sidecar: %v", err)
	}
	w.redeemed(d.GetCapability(), c)
	if _, _, err := w.k.RecordEffect(w.ctx, actionID, effect); err != nil {
		t.Fatalf("RecordEffect by the agent's own sidecar: %v", err)
	}
	if got, _, err := w.k.RecordReadback(w.ctx, verifierID, readback); err != nil || got.GetReadbackReceiptId() != "rb-1" {
		t.Fatalf("RecordReadback by the agent's own sidecar = %v, %v", got, err)
	}
	if watched, err := w.k.WatchedRecords(w.ctx, evidenceID); err != nil || len(watched) != 1 || watched[0].GetRecordKey() != claimKey {
		t.Errorf("WatchedRecords for the agent's own sidecar = %v, %v; want %s", watched, err, claimKey)
	}
	if rec, err := w.k.ReportStateChange(w.ctx, evidenceID, claimsDB, claimKey, version43, w.clock.Now()); err != nil || !rec.StateChanged {
		t.Errorf("ReportStateChange by the agent's own sidecar = %+v, %v", rec, err)
	}
}

// TestPeersCheck: a sidecar bound to an agent must be a peer, and the
// agent named.
func TestPeersCheck(t *testing.T) {
	peers := func(s authority.Serves) authority.Peers {
		return authority.Peers{Evidence: []string{"evidence", "evidence-a"}, Action: []string{"action-a"}, Verifier: []string{"verifier"}, Serves: s}
	}
	tests := []struct {
		name   string
		serves authority.Serves
		want   string
	}{
		{"none: every sidecar shared", nil, ""},
		{"per-agent and shared side by side", authority.Serves{"evidence-a": "a", "action-a": "a"}, ""},
		{"an unknown sidecar", authority.Serves{"evidence-b": "b"}, `sidecar "evidence-b" is no evidence, action or verifier peer`},
		{"no agent", authority.Serves{"evidence-a": ""}, `sidecar "evidence-a" serves no agent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := peers(tt.serves).Check()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Check() = %v, want %q", err, tt.want)
			}
		})
	}
	w := newWorld(t)
	w.serves = authority.Serves{"evidence-b": "b"}
	if _, err := authority.New(w.ctx, w.options(w.st)); err == nil || !strings.Contains(err.Error(), "evidence-b") {
		t.Fatalf("New with a binding of an unknown sidecar = %v, want an error naming it", err)
	}
}
