package authority_test

import (
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/debt"
	"github.com/ambitkernel/ambit/kernel/suite"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// debtItem is the debt record of widening older into newer, as ambitctl
// debt --format record writes it, with the approver's decision.
func debtItem(t *testing.T, id string, older, newer *ledgerv1.CanonItem, decision ledgerv1.AssuranceDecision) *ledgerv1.CanonItem {
	t.Helper()
	eps, err := suite.Load(suite.Seed)
	if err != nil {
		t.Fatal(err)
	}
	d, err := debt.Compute(older.GetContract(), newer.GetContract(), []string{suite.Seed}, eps, suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	return &ledgerv1.CanonItem{
		CanonItemId:    id,
		Kind:           ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_GOVERNANCE,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef:  "item:" + newer.GetCanonItemId(),
		Scope:          ledgerv1.Scope_SCOPE_TASK,
		Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
		Debt:           debt.Record(d, older.GetCanonItemId(), newer.GetCanonItemId(), decision, "re-run on the seed's episodes"),
	}
}

// TestWideningNeedsDebtRecord: the kernel refuses to promote a contract
// that widens the task's canonical one until a CANONICAL debt record
// accepts the widening; the record is a ledger item like every other,
// listed at any instant and replayed after a restart.
func TestWideningNeedsDebtRecord(t *testing.T) {
	w := newWorld(t)
	old := w.canonicalTask(task)
	wide := w.proposeWidening(t, old)

	_, err := w.k.PromoteItem(w.ctx, owner, "CTR-wide")
	wantRefusal(t, err, authority.ErrStale, "CONTRACTION_DEBT_UNPAID")
	if _, ok := errorv1.ErrorReason_value["ERROR_REASON_CONTRACTION_DEBT_UNPAID"]; !ok {
		t.Error("CONTRACTION_DEBT_UNPAID is not a declared ErrorReason")
	}
	if got := w.item("CTR-wide"); got.Class != ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL {
		t.Errorf("after the refusal CTR-wide is %s", got.Class)
	}

	// A record that names fewer routes than the widening adds is refused.
	rec := debtItem(t, "DEBT-wide", old.Item, wide, ledgerv1.AssuranceDecision_ASSURANCE_DECISION_ACCEPTED)
	short := proto.CloneOf(rec)
	short.CanonItemId = "DEBT-short"
	short.Debt.AddedRoutes = short.Debt.AddedRoutes[1:]
	_, err = w.k.ProposeItem(w.ctx, owner, short)
	wantRefusal(t, err, authority.ErrInvalid, "LEDGER_INVALID_ITEM")

	w.propose(rec)
	// Proposed is not paid: only a promoted record counts.
	_, err = w.k.PromoteItem(w.ctx, owner, "CTR-wide")
	wantRefusal(t, err, authority.ErrStale, "CONTRACTION_DEBT_UNPAID")

	w.clock.Advance(time.Minute)
	if got := w.promote("DEBT-wide"); got.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Fatalf("debt record is %s: %v", got.Class, got.Reasons)
	}
	beforeWidening := w.clock.Now()
	w.clock.Advance(time.Minute)
	if got := w.promote("CTR-wide"); got.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Fatalf("widening is %s after its debt was paid: %v", got.Class, got.Reasons)
	}
	if _, _, err := w.k.SupersedeItem(w.ctx, owner, old.Item.GetCanonItemId(), "CTR-wide"); err != nil {
		t.Fatalf("SupersedeItem: %v", err)
	}

	classes := func(at time.Time) map[string]ledgerv1.CanonClass {
		items, _, err := allItems(w.ctx, w.k, at)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]ledgerv1.CanonClass{}
		for _, c := range items {
			out[c.Item.GetCanonItemId()] = c.Class
		}
		return out
	}
	want := map[string]ledgerv1.CanonClass{
		old.Item.GetCanonItemId(): ledgerv1.CanonClass_CANON_CLASS_CANONICAL,
		"CTR-wide":                ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL,
		"DEBT-wide":               ledgerv1.CanonClass_CANON_CLASS_CANONICAL,
	}
	if diff := cmp.Diff(want, classes(beforeWidening)); diff != "" {
		t.Errorf("ledger before the widening (-want +got):\n%s", diff)
	}
	want[old.Item.GetCanonItemId()] = ledgerv1.CanonClass_CANON_CLASS_DEPRECATED
	want["CTR-wide"] = ledgerv1.CanonClass_CANON_CLASS_CANONICAL
	if diff := cmp.Diff(want, classes(time.Time{})); diff != "" {
		t.Errorf("ledger now (-want +got):\n%s", diff)
	}

	// A restart replays the journal, debt rule included, to the same ledger.
	before, _, err := allItems(w.ctx, w.k, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.st.Close(); err != nil {
		t.Fatal(err)
	}
	w.st = w.openStore()
	w.k = w.newKernel(w.st)
	after, _, err := allItems(w.ctx, w.k, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after, protocmp.Transform()); diff != "" {
		t.Errorf("ledger after restart (-before +after):\n%s", diff)
	}
}

// TestRefusedWideningStaysUnpromoted: a canonical record whose approver
// refused the widening does not pay its debt, and a contract of the same
// task that only narrows needs no record.
func TestRefusedWideningStaysUnpromoted(t *testing.T) {
	w := newWorld(t)
	old := w.canonicalTask(task)
	wide := contractItem("CTR-wide", coupledContract(t, task, func(c *contractv1.Contract) {
		c.Version = "2"
		c.Action.MaxActions = 3
		c.Action.MaxCumulativeAmount = nil
	}))
	w.propose(wide)
	w.propose(debtItem(t, "DEBT-refused", old.Item, wide, ledgerv1.AssuranceDecision_ASSURANCE_DECISION_REFUSED))
	w.promote("DEBT-refused")
	_, err := w.k.PromoteItem(w.ctx, owner, "CTR-wide")
	wantRefusal(t, err, authority.ErrStale, "CONTRACTION_DEBT_UNPAID")

	narrow := contractItem("CTR-narrow", coupledContract(t, task, func(c *contractv1.Contract) {
		c.Version = "3"
		c.Reflexive.VisibleFacts = []string{"capabilities"}
	}))
	w.propose(narrow)
	if got := w.promote("CTR-narrow"); got.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("narrowing is %s: %v", got.Class, got.Reasons)
	}
}

// proposeWidening proposes CTR-wide, the next version of old's contract,
// which also releases salary and allows refunds up to 200.00, to supersede
// old: a widening that needs a debt record.
func (w *world) proposeWidening(t *testing.T, old canon.Classified) *ledgerv1.CanonItem {
	t.Helper()
	wide := contractItem("CTR-wide", coupledContract(t, task, func(c *contractv1.Contract) {
		c.Version = "2"
		c.Evidence.Fields = append(c.Evidence.Fields, "salary")
		c.Action.MaxAmount.MinorUnits = 20000
	}))
	wide.SupersedesRef = old.Item.GetCanonItemId()
	w.propose(wide)
	return wide
}
