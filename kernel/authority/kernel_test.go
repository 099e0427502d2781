package authority_test

import (
	"testing"

	"github.com/ambitkernel/ambit/kernel/authority"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
)

func TestNewRefusesIncompleteOptions(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name string
		edit func(*authority.Options)
	}{
		{"no store", func(o *authority.Options) { o.Store = nil }},
		{"no signer", func(o *authority.Options) { o.Signer = nil }},
		{"no log", func(o *authority.Options) { o.Log = nil }},
		{"no key for the kernel", func(o *authority.Options) { o.Signer = w.stranger }},
		{"no key for a verifier", func(o *authority.Options) { o.Peers.Verifier = []string{"ghost"} }},
		{"no key for an evidence adapter", func(o *authority.Options) { o.Peers.Evidence = append(o.Peers.Evidence, "ghost") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := w.options(w.st)
			tt.edit(&o)
			if k, err := authority.New(w.ctx, o); err == nil || k != nil {
				t.Errorf("New = %v, %v; want an error", k, err)
			}
		})
	}
}

// TestReadbackVerdicts: the same readback twice is a no-op; a later
// readback replaces the verdict and the journal keeps both; a failed
// commitment cannot be redeemed again.
func TestReadbackVerdicts(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task)
	w.redeemed(d.GetCapability(), c)
	if _, _, err := w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-1")); err != nil {
		t.Fatal(err)
	}
	ok := w.readback(c, "rb-1", "eff-1", receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED)
	if _, _, err := w.k.RecordReadback(w.ctx, verifierID, ok); err != nil {
		t.Fatal(err)
	}
	before := len(w.entries())
	if got, _, err := w.k.RecordReadback(w.ctx, verifierID, ok); err != nil || got.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED {
		t.Errorf("same readback again = %v, %v", got, err)
	}
	if after := len(w.entries()); after != before {
		t.Errorf("the same readback journaled %d entries", after-before)
	}
	// An effect recorded after the readback is still the same effect.
	if _, _, err := w.k.RecordEffect(w.ctx, actionID, w.effect(c, "eff-1")); err != nil {
		t.Errorf("RecordEffect after readback: %v", err)
	}
	got, _, err := w.k.RecordReadback(w.ctx, verifierID, w.readback(c, "rb-2", "eff-1", receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH, "payment reversed"))
	if err != nil {
		t.Fatal(err)
	}
	if got.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED || got.GetReadbackReceiptId() != "rb-2" || got.GetNote() == "" {
		t.Errorf("later mismatch = %v, want FAILED by rb-2 with a note", got)
	}
	if n := len(w.entries()) - before; n != 1 {
		t.Errorf("the later readback journaled %d entries, want 1", n)
	}
	_, err = w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName)
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_CLOSED")
}

func TestResolveConflict(t *testing.T) {
	w := newWorld(t)
	policy := w.canonicalTask(task)
	tool := &ledgerv1.CanonItem{
		CanonItemId: "TOOL-1", Kind: ledgerv1.ItemKind_ITEM_KIND_TOOL_OUTPUT, Text: "refund limit is GBP 2000",
		SourceOrigin: ledgerv1.SourceOrigin_SOURCE_ORIGIN_TOOL, AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE,
		ProvenanceRef: "tool:policy-lookup/run-1", Scope: ledgerv1.Scope_SCOPE_TASK, Lifetime: ledgerv1.Lifetime_LIFETIME_TASK,
		ConflictState: ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED, ConflictsWith: policy.Item.GetCanonItemId(),
	}
	c, err := w.k.ProposeItem(w.ctx, "tool-adapter", tool)
	if err != nil {
		t.Fatal(err)
	}
	if c.Class != ledgerv1.CanonClass_CANON_CLASS_EXTERNAL_UNTRUSTED {
		t.Errorf("tool output is %s", c.Class)
	}
	_, err = w.k.ResolveConflict(w.ctx, "tool-adapter", "TOOL-1", "mine")
	wantRefusal(t, err, authority.ErrDenied, "LEDGER_SELF_PROMOTION")
	_, err = w.k.ResolveConflict(w.ctx, "governance", "TOOL-1", "no")
	wantRefusal(t, err, authority.ErrDenied, "LEDGER_NOT_AUTHORISED")
	r, err := w.k.ResolveConflict(w.ctx, owner, "TOOL-1", "the policy stands")
	if err != nil {
		t.Fatal(err)
	}
	if r.Item.GetConflictState() != ledgerv1.ConflictState_CONFLICT_STATE_RESOLVED || r.Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("resolved = %s %s", r.Item.GetConflictState(), r.Class)
	}
	// The contract is unchanged and still canonical.
	if got := w.item(policy.Item.GetCanonItemId()); got.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("policy is %s", got.Class)
	}
}
