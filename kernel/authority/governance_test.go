package authority_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/canon"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestBindTaskFirstTime binds a task that was never bound: the normal way a
// task gets its contract.
func TestBindTaskFirstTime(t *testing.T) {
	w := newWorld(t)
	id := "CTR-" + task
	w.propose(contractItem(id, coupledContract(t, task)))
	w.promote(id)
	before := len(w.entries())
	c, err := w.k.BindTask(w.ctx, "governance", task, id, agentName)
	if err != nil {
		t.Fatalf("BindTask of a never-bound task: %v", err)
	}
	if c.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL || c.Item.GetCanonItemId() != id {
		t.Errorf("BindTask = %s %s", c.Item.GetCanonItemId(), c.Class)
	}
	if got := kinds(w.entries()[before:]); len(got) != 1 || got[0] != "task.bind" {
		t.Errorf("journaled %v, want [task.bind]", got)
	}
	// Binding again to the same item is a no-op.
	if _, err := w.k.BindTask(w.ctx, "governance", task, id, agentName); err != nil {
		t.Errorf("rebinding to the same item: %v", err)
	}
	if _, err := w.k.AuthorizeRead(w.ctx, authority.Read{Agent: agentName, TaskID: task, Purpose: purpose, Source: claimsDB, RecordKey: claimKey, Fields: []string{"claim_id"}}); err != nil {
		t.Errorf("AuthorizeRead after binding: %v", err)
	}
}

func TestProposeAndPromoteRefusals(t *testing.T) {
	w := newWorld(t)
	id := "CTR-" + task
	first := w.propose(contractItem(id, coupledContract(t, task)))
	if first.Class != ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL || first.Item.GetContentHash() == "" {
		t.Fatalf("proposed = %s, hash %q", first.Class, first.Item.GetContentHash())
	}
	// The same item again is idempotent.
	again := w.propose(contractItem(id, coupledContract(t, task)))
	if diff := cmp.Diff(first.Item, again.Item, protocmp.Transform()); diff != "" {
		t.Errorf("re-proposing changed the item (-first +again):\n%s", diff)
	}

	other := contractItem(id, coupledContract(t, task, func(c *contractv1.Contract) { c.Action.MaxActions = 5 }))
	forged := contractItem("CTR-forged", coupledContract(t, task))
	forged.PromotionState = ledgerv1.PromotionState_PROMOTION_STATE_APPROVED
	forged.PromotionAuthority = owner
	badContract := contractItem("CTR-bad", coupledContract(t, task, func(c *contractv1.Contract) { c.Binding.Subject = "" }))
	wrongHash := contractItem("CTR-hash", coupledContract(t, task))
	wrongHash.ContentHash = "00"
	tests := []struct {
		name   string
		run    func() error
		kind   error
		reason string
	}{
		{"same id, other content", func() error { _, err := w.k.ProposeItem(w.ctx, owner, other); return err }, authority.ErrExists, "LEDGER_IDENTITY_REUSE"},
		{"no id", func() error {
			_, err := w.k.ProposeItem(w.ctx, owner, contractItem("", coupledContract(t, task)))
			return err
		}, authority.ErrInvalid, "INVALID_ITEM"},
		{"invalid contract", func() error { _, err := w.k.ProposeItem(w.ctx, owner, badContract); return err }, authority.ErrInvalid, "INVALID_CONTRACT"},
		{"proposal carries an approval", func() error { _, err := w.k.ProposeItem(w.ctx, owner, forged); return err }, authority.ErrInvalid, "LEDGER_FORGED_DECISION"},
		{"declared hash is wrong", func() error { _, err := w.k.ProposeItem(w.ctx, owner, wrongHash); return err }, authority.ErrInvalid, "LEDGER_HASH_MISMATCH"},
		{"owner authority claimed by governance", func() error {
			_, err := w.k.ProposeItem(w.ctx, "governance", contractItem("CTR-claimed", coupledContract(t, task)))
			return err
		}, authority.ErrDenied, "LEDGER_NOT_AUTHORISED"},
		{"promoted by governance", func() error { _, err := w.k.PromoteItem(w.ctx, "governance", id); return err }, authority.ErrDenied, "LEDGER_NOT_AUTHORISED"},
		{"promoted by the agent", func() error { _, err := w.k.PromoteItem(w.ctx, agentName, id); return err }, authority.ErrDenied, "LEDGER_NOT_AUTHORISED"},
		{"promote unknown item", func() error { _, err := w.k.PromoteItem(w.ctx, owner, "CTR-nope"); return err }, authority.ErrNotFound, "LEDGER_UNKNOWN_ITEM"},
		{"bind unknown item", func() error { _, err := w.k.BindTask(w.ctx, "governance", task, "CTR-nope", agentName); return err }, authority.ErrNotFound, "ITEM_NOT_FOUND"},
		{"bind to another task", func() error { _, err := w.k.BindTask(w.ctx, "governance", "other-task", id, agentName); return err }, authority.ErrInvalid, "BINDING_MISMATCH"},
		{"bind without task", func() error { _, err := w.k.BindTask(w.ctx, "governance", "", id, agentName); return err }, authority.ErrInvalid, "INVALID_REQUEST"},
		{"supersede by an unknown item", func() error { _, _, err := w.k.SupersedeItem(w.ctx, "governance", id, "CTR-nope"); return err }, authority.ErrNotFound, "LEDGER_UNKNOWN_ITEM"},
		{"derive without child id", func() error { _, err := w.k.DeriveHandoff(w.ctx, owner, id, "", nil, "", ""); return err }, authority.ErrInvalid, "INVALID_ITEM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.entries())
			wantRefusal(t, tt.run(), tt.kind, tt.reason)
			if after := len(w.entries()); after != before {
				t.Errorf("a refused transition journaled %d entries", after-before)
			}
		})
	}
	if got := w.item(id); got.Class != ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL || got.Item.GetContract().GetAction().GetMaxActions() != 1 {
		t.Errorf("after the refusals the item is %s with max_actions %d", got.Class, got.Item.GetContract().GetAction().GetMaxActions())
	}
}

func TestSupersedeItem(t *testing.T) {
	w := newWorld(t)
	old := w.canonicalTask(task)
	oldID := old.Item.GetCanonItemId()
	_, c := w.allowed(task)
	env, _ := w.read(task)

	next := contractItem("CTR-v2", coupledContract(t, task, func(c *contractv1.Contract) { c.Version = "2" }))
	next.SupersedesRef = oldID
	w.propose(next)
	w.promote("CTR-v2")

	// Only an authority supersedes.
	_, _, err := w.k.SupersedeItem(w.ctx, "governance", oldID, "CTR-v2")
	wantRefusal(t, err, authority.ErrDenied, "LEDGER_NOT_AUTHORISED")
	// The replacement must name what it replaces.
	_, _, err = w.k.SupersedeItem(w.ctx, owner, "CTR-v2", oldID)
	wantRefusal(t, err, authority.ErrInvalid, "LEDGER_INVALID_TRANSITION")

	w.clock.Advance(time.Hour)
	beforeSupersession := w.clock.Now().Add(-time.Second)
	o, n, err := w.k.SupersedeItem(w.ctx, owner, oldID, "CTR-v2")
	if err != nil {
		t.Fatalf("SupersedeItem: %v", err)
	}
	if o.Class != ledgerv1.CanonClass_CANON_CLASS_DEPRECATED || n.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("after supersession: old %s, new %s", o.Class, n.Class)
	}
	// The old item is kept, with its content.
	if diff := cmp.Diff(old.Item.GetContract(), o.Item.GetContract(), protocmp.Transform()); diff != "" {
		t.Errorf("deprecated contract changed (-want +got):\n%s", diff)
	}

	// Its outstanding capability was revoked.
	_, err = w.k.Redeem(w.ctx, actionID, w.sign(w.kernel, c), c.GetIdempotencyKey(), agentName)
	wantRefusal(t, err, authority.ErrStale, "CAPABILITY_REVOKED")
	commitments, err := allCommitments(w.ctx, w.k, task)
	if err != nil {
		t.Fatal(err)
	}
	if len(commitments) != 1 || commitments[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED ||
		!strings.Contains(commitments[0].GetNote(), "superseded") {
		t.Errorf("commitments = %v, want one REVOKED by the supersession", commitments)
	}

	// The task, still bound to the old item, gets no ALLOW.
	d := w.submit(proposal(task, refund(1740, subject), env))
	if diff := cmp.Diff(verdict{"OUTCOME_REVIEW", []string{"CONTRACT_NOT_CANONICAL"}}, verdictOf(d)); diff != "" {
		t.Errorf("under the deprecated contract (-want +got):\n%s", diff)
	}
	if d.GetCapability() != nil {
		t.Error("a deprecated contract issued a capability")
	}

	// Replaying to before the supersession shows the old item canonical.
	past, head, err := allItems(w.ctx, w.k, beforeSupersession)
	if err != nil {
		t.Fatal(err)
	}
	if got := classes(past); got[oldID] != ledgerv1.CanonClass_CANON_CLASS_CANONICAL || got["CTR-v2"] != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("classes before the supersession = %v", got)
	}
	if want := rootOf(w.entries()); head != want {
		t.Errorf("Items head = %q, want the journal's root %q", head, want)
	}
	beforeAll, _, err := allItems(w.ctx, w.k, start.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(beforeAll) != 0 {
		t.Errorf("items before the first transition = %v", classes(beforeAll))
	}

	// Rebinding the task to the replacement restores its reach.
	w.bind(task, "CTR-v2")
	env2, _ := w.read(task)
	if d := w.submit(proposal(task, refund(1740, subject), env2)); d.GetCapability() == nil {
		t.Errorf("under the replacement: %+v, want ALLOW", verdictOf(d))
	}
	// A superseded item cannot be promoted or superseded again.
	_, err = w.k.PromoteItem(w.ctx, owner, oldID)
	wantRefusal(t, err, authority.ErrStale, "LEDGER_SUPERSEDED")
}

func TestRebindRevokesOutstanding(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	_, c := w.allowed(task)
	w.propose(contractItem("CTR-v2", coupledContract(t, task, func(c *contractv1.Contract) { c.Version = "2" })))
	w.promote("CTR-v2")
	w.bind(task, "CTR-v2")
	list, err := allCommitments(w.ctx, w.k, task)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].GetCapabilityId() != c.GetCapabilityId() || list[0].GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED {
		t.Errorf("commitments after rebinding = %v, want the capability REVOKED", list)
	}
}

func classes(items []canon.Classified) map[string]ledgerv1.CanonClass {
	out := map[string]ledgerv1.CanonClass{}
	for _, c := range items {
		out[c.Item.GetCanonItemId()] = c.Class
	}
	return out
}

// TestRestartReplaysLedger: a kernel built over the same store file
// answers as the one before it.
func TestRestartReplaysLedger(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	d, c := w.allowed(task)
	brq, err := w.k.BoundaryChange(w.ctx, agentName, task, "more")
	if err != nil {
		t.Fatal(err)
	}
	w.propose(contractItem("CTR-draft", coupledContract(t, "draft-task")))
	next := contractItem("CTR-v2", coupledContract(t, "other-task"))
	w.propose(next)
	w.promote("CTR-v2")
	w.canonicalTask("old-task")
	repl := contractItem("CTR-old-v2", coupledContract(t, "old-task", func(c *contractv1.Contract) { c.Version = "2" }))
	repl.SupersedesRef = "CTR-old-task"
	w.propose(repl)
	w.promote("CTR-old-v2")
	if _, _, err := w.k.SupersedeItem(w.ctx, owner, "CTR-old-task", "CTR-old-v2"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.k.DeriveHandoff(w.ctx, owner, "CTR-"+task, "CTR-child", nil, "", ""); err != nil {
		t.Fatal(err)
	}
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
	want := map[string]ledgerv1.CanonClass{
		"CTR-" + task:             ledgerv1.CanonClass_CANON_CLASS_CANONICAL,
		brq.Item.GetCanonItemId(): ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL,
		"CTR-draft":               ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL,
		"CTR-v2":                  ledgerv1.CanonClass_CANON_CLASS_CANONICAL,
		"CTR-old-task":            ledgerv1.CanonClass_CANON_CLASS_DEPRECATED,
		"CTR-old-v2":              ledgerv1.CanonClass_CANON_CLASS_CANONICAL,
		"CTR-child":               ledgerv1.CanonClass_CANON_CLASS_HOLD,
	}
	if diff := cmp.Diff(want, classes(after)); diff != "" {
		t.Errorf("classes after restart (-want +got):\n%s", diff)
	}
	// The capability issued before the restart is redeemed once after it.
	w.redeemed(d.GetCapability(), c)
	if r, err := w.k.Redeem(w.ctx, actionID, d.GetCapability(), c.GetIdempotencyKey(), agentName); err != nil || r.First {
		t.Errorf("second redemption after restart = %+v, %v", r, err)
	}
	if rep, err := w.k.VerifyLog(w.ctx, nil); err != nil || !rep.OK {
		t.Errorf("VerifyLog after restart = %+v, %v", rep, err)
	}
}

func TestDeriveHandoff(t *testing.T) {
	w := newWorld(t)
	parent := w.canonicalTask(task)
	pc := parent.Item.GetContract()

	hold, err := w.k.DeriveHandoff(w.ctx, owner, parent.Item.GetCanonItemId(), "CTR-child-nofilter", nil, "", "")
	if err != nil {
		t.Fatalf("DeriveHandoff without filter: %v", err)
	}
	if hold.Class != ledgerv1.CanonClass_CANON_CLASS_HOLD {
		t.Errorf("unfiltered child is %s, want HOLD", hold.Class)
	}
	if promoted, err := w.k.PromoteItem(w.ctx, owner, "CTR-child-nofilter"); err == nil && promoted.Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		t.Errorf("a promoted unfiltered child became CANONICAL")
	}

	filter := &ledgerv1.HandoffFilter{
		Fields:       []string{"claim_id", "receipt_total", "salary"},
		Sources:      []string{claimsDB, "hr_db"},
		Tools:        []string{"refund", "email_attachment"},
		Destinations: []string{"claimant", "external"},
		VisibleFacts: []string{"uncertainty", "credentials"},
		MaxAmount:    &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 3000},
		MaxActions:   5,
	}
	child, err := w.k.DeriveHandoff(w.ctx, owner, parent.Item.GetCanonItemId(), "CTR-child", filter, "", "")
	if err != nil {
		t.Fatalf("DeriveHandoff: %v", err)
	}
	cc := child.Item.GetContract()
	if child.Item.GetHandoffParentRef() != parent.Item.GetCanonItemId() || !child.Item.GetHandoffFilterDeclared() {
		t.Errorf("child handoff fields = %q %v", child.Item.GetHandoffParentRef(), child.Item.GetHandoffFilterDeclared())
	}
	subset := func(name string, child, parent []string) {
		for _, s := range child {
			if !slices.Contains(parent, s) {
				t.Errorf("child %s has %q, which the parent does not grant", name, s)
			}
		}
	}
	subset("fields", cc.GetEvidence().GetFields(), pc.GetEvidence().GetFields())
	for _, tool := range cc.GetAction().GetTools() {
		i := slices.IndexFunc(pc.GetAction().GetTools(), func(p *contractv1.ToolGrant) bool { return p.GetName() == tool.GetName() })
		if i < 0 {
			t.Errorf("child has tool %q, which the parent does not grant", tool.GetName())
			continue
		}
		for _, d := range tool.GetDestinations() {
			if !slices.ContainsFunc(pc.GetAction().GetTools()[i].GetDestinations(), func(p *contractv1.DestinationClass) bool { return p.GetName() == d.GetName() }) {
				t.Errorf("child tool %s reaches %q, which the parent does not grant", tool.GetName(), d.GetName())
			}
		}
	}
	subset("visible facts", cc.GetReflexive().GetVisibleFacts(), pc.GetReflexive().GetVisibleFacts())
	var sources []string
	for _, s := range cc.GetEvidence().GetSources() {
		sources = append(sources, s.GetName())
	}
	if diff := cmp.Diff([]string{claimsDB}, sources); diff != "" {
		t.Errorf("child sources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"claim_id", "receipt_total"}, cc.GetEvidence().GetFields()); diff != "" {
		t.Errorf("child fields (-want +got):\n%s", diff)
	}
	if got := cc.GetAction().GetMaxAmount().GetMinorUnits(); got != 3000 {
		t.Errorf("child max amount = %d, want 3000", got)
	}
	if got := cc.GetAction().GetApprovalOver().GetMinorUnits(); got > 3000 {
		t.Errorf("child approval threshold %d above its hard limit", got)
	}
	if got := cc.GetAction().GetMaxActions(); got != pc.GetAction().GetMaxActions() {
		t.Errorf("child max actions = %d, want the parent's %d", got, pc.GetAction().GetMaxActions())
	}
	if len(cc.GetReflexive().GetMutableFacts()) != 0 {
		t.Errorf("child may mutate %v", cc.GetReflexive().GetMutableFacts())
	}
	// The parent is unchanged.
	if diff := cmp.Diff(parent.Item, w.item(parent.Item.GetCanonItemId()).Item, protocmp.Transform()); diff != "" {
		t.Errorf("parent changed (-before +after):\n%s", diff)
	}
	// A filter in another currency is refused.
	_, err = w.k.DeriveHandoff(w.ctx, owner, parent.Item.GetCanonItemId(), "CTR-child-eur", &ledgerv1.HandoffFilter{MaxAmount: &contractv1.Money{CurrencyCode: "EUR", MinorUnits: 1}}, "", "")
	wantRefusal(t, err, authority.ErrInvalid, "LEDGER_INVALID_FILTER")
}

// TestDeriveHandoffChildCanBecomeCanonical: a child derived through a
// declared filter is meant to be enforceable once an authority promotes it
// (DESIGN.md §3, canon fixture 04); the child task can then act.
func TestDeriveHandoffChildCanBecomeCanonical(t *testing.T) {
	w := newWorld(t)
	parent := w.canonicalTask(task)
	filter := &ledgerv1.HandoffFilter{
		Fields: []string{"claim_id", "claimant_id", "receipt_total"}, Sources: []string{claimsDB},
		Tools: []string{"refund"}, Destinations: []string{"claimant"}, VisibleFacts: []string{"uncertainty"},
	}
	if _, err := w.k.DeriveHandoff(w.ctx, owner, parent.Item.GetCanonItemId(), "CTR-child", filter, "", ""); err != nil {
		t.Fatalf("DeriveHandoff: %v", err)
	}
	c, err := w.k.PromoteItem(w.ctx, owner, "CTR-child")
	if err != nil || c.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		got := w.item("CTR-child")
		t.Fatalf("a filtered handoff child did not become CANONICAL: promote err %v; class %s %v", err, got.Class, got.Reasons)
	}
	w.bind("child-task", "CTR-child")
	env, _ := w.read("child-task")
	if d := w.submit(proposal("child-task", refund(1740, subject), env)); d.GetCapability() == nil {
		t.Errorf("child task: %+v, want ALLOW", verdictOf(d))
	}
}

// TestDeriveHandoffBindsInOneCommit: deriving a child and binding its task
// happen together; a binding refused leaves no child item behind.
func TestDeriveHandoffBindsInOneCommit(t *testing.T) {
	w := newWorld(t)
	parent := w.canonicalTask(task)
	filter := &ledgerv1.HandoffFilter{Fields: []string{"claim_id"}, Sources: []string{claimsDB}, Tools: []string{"refund"}, Destinations: []string{"claimant"}}
	before := len(w.entries())
	_, err := w.k.DeriveHandoff(w.ctx, owner, parent.Item.GetCanonItemId(), "CTR-orphan", filter, "child-task", "")
	wantRefusal(t, err, authority.ErrInvalid, "INVALID_REQUEST")
	items, _, err := allItems(w.ctx, w.k, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range items {
		if c.Item.GetCanonItemId() == "CTR-orphan" {
			t.Fatal("a refused binding left the child item behind")
		}
	}
	if after := len(w.entries()); after != before {
		t.Errorf("the refusal journaled %d entries", after-before)
	}

	c, err := w.k.DeriveHandoff(w.ctx, owner, parent.Item.GetCanonItemId(), "CTR-child", filter, "child-task", "agent-b")
	if err != nil {
		t.Fatal(err)
	}
	if c.Item.GetCanonItemId() != "CTR-child" {
		t.Errorf("derived %s", c.Item.GetCanonItemId())
	}
	if diff := cmp.Diff([]string{"canon", "task.bind"}, kinds(w.entries()[before:])); diff != "" {
		t.Errorf("journaled (-want +got):\n%s", diff)
	}
}

// TestCommitmentsRefuseAnEmptyPage: a page holds at least one commitment.
func TestCommitmentsRefuseAnEmptyPage(t *testing.T) {
	w := newWorld(t)
	_, _, err := w.k.Commitments(w.ctx, authority.CommitmentQuery{})
	wantRefusal(t, err, authority.ErrInvalid, "INVALID_REQUEST")
}

// TestItemsRefuseBadPages: an empty page, and a page after an item the
// ledger does not hold (now, or at an instant before it was proposed),
// are refused.
func TestItemsRefuseBadPages(t *testing.T) {
	w := newWorld(t)
	before := w.clock.Now()
	w.clock.Advance(time.Minute)
	w.propose(contractItem("CTR-late", coupledContract(t, "task-late")))
	for _, q := range []authority.ItemQuery{
		{},
		{After: "CTR-none", Limit: 10},
		{At: before, After: "CTR-late", Limit: 10},
	} {
		_, _, _, err := w.k.Items(w.ctx, q)
		wantRefusal(t, err, authority.ErrInvalid, "INVALID_REQUEST")
	}
	page, _, next, err := w.k.Items(w.ctx, authority.ItemQuery{After: "CTR-late", Limit: 10})
	if err != nil || len(page) != 0 || next != "" {
		t.Errorf("page after the last item = %v, next %q, %v; want an empty last page", page, next, err)
	}
}

// TestItemsAtAPastInstantAcrossPages: the pages of a listing at a past
// instant come from one fold of the journal, kept between pages and
// compacted (no contract held in memory), and are the ledger as it stood
// then, whatever is recorded between pages and whichever other instant
// is listed meanwhile; the fold is dropped once unused.
func TestItemsAtAPastInstantAcrossPages(t *testing.T) {
	w := newWorld(t)
	for i := range 5 {
		w.clock.Advance(time.Minute)
		w.propose(contractItem(fmt.Sprintf("CTR-%d", i), coupledContract(t, fmt.Sprintf("task-%d", i))))
	}
	then := w.clock.Now() // five items, none promoted
	// want is the listing at then as a kernel that never listed it
	// before makes it.
	want := func() []canon.Classified {
		items, _, err := allItems(w.ctx, w.newKernel(w.st), then)
		if err != nil {
			t.Fatal(err)
		}
		return items
	}()
	if len(want) != 5 || slices.ContainsFunc(want, func(c canon.Classified) bool { return c.Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL }) {
		t.Fatalf("items at the instant = %v, want five, none canonical", classes(want))
	}

	page := func(at time.Time, after string) ([]canon.Classified, string) {
		t.Helper()
		items, _, next, err := w.k.Items(w.ctx, authority.ItemQuery{At: at, After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		return items, next
	}
	got, next := page(then, "")
	if held, contracts, from := authority.PastLedger(w.k); !held || contracts != 0 || from != 0 {
		t.Errorf("after the first page: past ledger held %v with %d contracts in memory, folded from %d; want it held, compacted, from the start (no snapshot)", held, contracts, from)
	}
	// Between pages: an item promoted and another proposed, after the
	// instant; then a listing of another instant.
	w.clock.Advance(time.Minute)
	w.promote("CTR-0")
	w.propose(contractItem("CTR-late", coupledContract(t, "task-late")))
	if items, _, err := allItems(w.ctx, w.k, w.clock.Now()); err != nil || len(items) != 6 {
		t.Fatalf("items now: %v, %v; want six", classes(items), err)
	}
	for i := 0; next != ""; i++ {
		if i > len(want) {
			t.Fatalf("more pages at the instant than the %d items there were", len(want))
		}
		var more []canon.Classified
		more, next = page(then, next)
		got = append(got, more...)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("pages at the instant (-fresh kernel +pages):\n%s", diff)
	}
	for _, c := range got {
		if c.Item.GetContract() == nil {
			t.Errorf("item %s listed without its contract", c.Item.GetCanonItemId())
		}
	}

	// A snapshot taken now serves a later instant, not an earlier one.
	now := w.clock.Now()
	wantNow, _, err := allItems(w.ctx, w.newKernel(w.st), now)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.k.Snapshot(w.ctx); err != nil {
		t.Fatal(err)
	}
	size := int64(len(w.entries()))
	w.clock.Advance(time.Minute)
	w.promote("CTR-1")
	for _, c := range []struct {
		at       time.Time
		want     []canon.Classified
		snapshot bool
	}{{now, wantNow, true}, {then, want, false}} {
		got, err := allPages(func(after string) ([]canon.Classified, string, error) {
			items, next := page(c.at, after)
			return items, next, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, got, protocmp.Transform()); diff != "" {
			t.Errorf("pages at %s (-before the snapshot +after):\n%s", c.at, diff)
		}
		if _, _, from := authority.PastLedger(w.k); c.snapshot != (from == size) || !c.snapshot && from != 0 {
			t.Errorf("pages at %s folded from journal position %d; want the snapshot's (%d): %v", c.at, from, size, c.snapshot)
		}
	}

	// A caller that stops waiting leaves the fold to the next one.
	gone, cancel := context.WithCancel(w.ctx)
	cancel()
	other := then.Add(-time.Second)
	if _, _, _, err := w.k.Items(gone, authority.ItemQuery{At: other, Limit: 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("a listing whose caller stopped waiting: %v, want context.Canceled", err)
	}
	if held, _, _ := authority.PastLedger(w.k); !held {
		t.Error("the fold of a listing whose caller stopped waiting was dropped")
	}
	if items, _, _, err := w.k.Items(w.ctx, authority.ItemQuery{At: other, Limit: 10}); err != nil || len(items) != 4 {
		t.Errorf("the same instant asked again: %v, %v; want its four items", classes(items), err)
	}

	authority.KeepPast(w.k, time.Millisecond)
	page(then, "")
	deadline := time.Now().Add(5 * time.Second)
	for held, _, _ := authority.PastLedger(w.k); held; held, _, _ = authority.PastLedger(w.k) {
		if time.Now().After(deadline) {
			t.Fatal("the past ledger is still held after its keeping time")
		}
		time.Sleep(time.Millisecond)
	}
}
