package authority

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"go.uber.org/zap"
)

// ledgerUpdate runs fn, which applies ledger transitions, in a commit of
// its own. Transitions are serialised from validation to publication, and
// readers see them only once committed, so the in-memory ledger follows the
// journal exactly, in commit order. A refusal changes nothing; an update
// that applied a transition but did not commit restores the ledger from the
// journal.
func (k *Kernel) ledgerUpdate(ctx context.Context, fn func(tx store.Tx, now time.Time) error) error {
	k.ledger.wmu.Lock()
	defer k.ledger.wmu.Unlock()
	err := k.store.UpdateAlone(ctx, func(tx store.Tx) error {
		return fn(tx, k.clock())
	})
	if rerr := k.ledger.restore(context.WithoutCancel(ctx)); rerr != nil {
		return errors.Join(err, rerr)
	}
	return canonRefusal(err)
}

// canonRefusal maps the ledger's refusals onto refusal kinds.
func canonRefusal(err error) error {
	if err == nil {
		return nil
	}
	var r *Refusal
	if errors.As(err, &r) {
		return err
	}
	kind := map[string]error{
		"invalid_item": ErrInvalid, "invalid_transition": ErrInvalid, "hash_mismatch": ErrInvalid, "invalid_filter": ErrInvalid,
		"forged_decision": ErrInvalid, "identity_reuse": ErrExists, "unknown_item": ErrNotFound,
		"not_authorised": ErrDenied, "self_promotion": ErrDenied,
		"missing_provenance": ErrStale, "unresolved_conflict": ErrStale, "superseded": ErrStale,
		"contraction_debt_unpaid": ErrStale,
	}[canon.Code(err)]
	if kind == nil {
		return err
	}
	reason := "LEDGER_" + upper(canon.Code(err))
	if errors.Is(err, canon.ErrContractionDebtUnpaid) {
		// Not a malformed transition but a promotion whose debt is
		// outstanding: its own reason, so a client can ask for the record.
		reason = "CONTRACTION_DEBT_UNPAID"
	}
	return &Refusal{Kind: kind, Reason: reason, Message: err.Error()}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// ProposeItem records a new canon item proposed by actor.
func (k *Kernel) ProposeItem(ctx context.Context, actor string, item *ledgerv1.CanonItem) (canon.Classified, error) {
	if item.GetCanonItemId() == "" {
		return canon.Classified{}, refuse(ErrInvalid, "INVALID_ITEM", "item.canon_item_id must not be empty")
	}
	if c := item.GetContract(); c != nil {
		if _, err := k.compiler.Compile(c); err != nil {
			return canon.Classified{}, refuse(ErrInvalid, "INVALID_CONTRACT", "item.contract: %v", err)
		}
	}
	return k.transition(ctx, item.GetCanonItemId(), nil, canon.Transition{Kind: canon.Propose, Actor: actor, Item: item})
}

// PromoteItem promotes an item; only a principal holding promotion
// authority for its scope may.
func (k *Kernel) PromoteItem(ctx context.Context, actor, id string) (canon.Classified, error) {
	return k.transition(ctx, id, nil, canon.Transition{Kind: canon.Promote, Actor: actor, ItemID: id})
}

// ResolveConflict records an authorised owner's resolution.
func (k *Kernel) ResolveConflict(ctx context.Context, actor, id, note string) (canon.Classified, error) {
	return k.transition(ctx, id, nil, canon.Transition{Kind: canon.ResolveConflict, Actor: actor, ItemID: id, Note: note})
}

// SupersedeItem replaces old with replacement. Tasks bound to the old item
// lose their outstanding capabilities: a policy change cancels inherited
// reach.
func (k *Kernel) SupersedeItem(ctx context.Context, actor, old, replacement string) (canon.Classified, canon.Classified, error) {
	err := k.ledgerUpdate(ctx, func(tx store.Tx, now time.Time) error {
		if err := k.ledger.apply(tx, canon.Transition{Kind: canon.Supersede, At: now, Actor: actor, ItemID: old, OtherID: replacement}); err != nil {
			return err
		}
		tasks, err := tx.TasksBoundTo(old)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			if _, err := k.revoke(tx, "", t, fmt.Sprintf("contract %s superseded by %s", old, replacement), now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return canon.Classified{}, canon.Classified{}, err
	}
	o, _ := k.ledger.item(old)
	n, _ := k.ledger.item(replacement)
	o, n = k.ledger.filled(o), k.ledger.filled(n)
	k.log.Info("ledger", zap.String("transition", "supersede"), zap.String("item", old), zap.String("by", replacement), zap.String("actor", actor))
	return o, n, nil
}

// DeriveHandoff derives a child contract for another agent's task from a
// parent through a declared filter (nil: none, and the child is HOLD). With
// a child task it also binds that task to the child and childAgent, in the
// same commit: a refused binding leaves no child behind.
func (k *Kernel) DeriveHandoff(ctx context.Context, actor, parent, childItem string, filter *ledgerv1.HandoffFilter, childTask, childAgent string) (canon.Classified, error) {
	if childItem == "" {
		return canon.Classified{}, refuse(ErrInvalid, "INVALID_ITEM", "child_item_id must not be empty")
	}
	if childTask != "" && childAgent == "" {
		return canon.Classified{}, refuse(ErrInvalid, "INVALID_REQUEST", "binding child task %q needs the child agent", childTask)
	}
	var bind func(tx store.Tx, now time.Time) error
	if childTask != "" {
		bind = func(tx store.Tx, now time.Time) error { return k.bind(tx, now, childTask, childItem, childAgent) }
	}
	return k.transition(ctx, childItem, bind, canon.Transition{
		Kind: canon.DeriveHandoff, Actor: actor, ItemID: parent, Filter: filter,
		// The child's content is derived; its standing is the governance
		// workflow's, and it still needs its own promotion.
		Item: &ledgerv1.CanonItem{
			CanonItemId:    childItem,
			SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_GOVERNANCE,
			AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED,
			ProvenanceRef:  fmt.Sprintf("handoff:%s/by:%s", parent, actor),
			Scope:          ledgerv1.Scope_SCOPE_TASK,
			Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
		},
	})
}

// transition applies t and then, when set, then — both in one commit.
func (k *Kernel) transition(ctx context.Context, id string, then func(store.Tx, time.Time) error, t canon.Transition) (canon.Classified, error) {
	err := k.ledgerUpdate(ctx, func(tx store.Tx, now time.Time) error {
		t.At = now
		if err := k.ledger.apply(tx, t); err != nil {
			return err
		}
		if then != nil {
			return then(tx, now)
		}
		return nil
	})
	if err != nil {
		k.log.Info("ledger transition refused", zap.String("transition", t.Kind.String()), zap.String("item", id), zap.String("actor", t.Actor), zap.Error(err))
		return canon.Classified{}, err
	}
	c, _ := k.ledger.item(id)
	c = k.ledger.filled(c)
	k.log.Info("ledger", zap.String("transition", t.Kind.String()), zap.String("item", id), zap.String("actor", t.Actor), zap.String("class", c.Class.String()))
	return c, nil
}

// ItemQuery selects a page of canon items.
type ItemQuery struct {
	// At, when set, is the past instant the ledger is replayed to; zero is
	// now.
	At time.Time
	// After keeps the items first recorded after this one, which must be
	// an item of the ledger (at At).
	After string
	// Limit bounds the page; it is at least 1.
	Limit int
}

// Items lists a page of canon items in the order first recorded, each
// with its class now or as the ledger stood at q.At, and the root hash of
// the journal it was read from. next is the last item's identifier when
// more follow, else empty. Only the page's contracts are read in full, and
// classified when the ledger is replayed. A replay to a past instant folds
// the journal once, as a start-up does, and keeps the result for the pages
// that follow (see past).
func (k *Kernel) Items(ctx context.Context, q ItemQuery) (page []canon.Classified, head, next string, err error) {
	if q.Limit < 1 {
		return nil, "", "", refuse(ErrInvalid, "INVALID_REQUEST", "limit must be at least 1, got %d", q.Limit)
	}
	var more, ok bool
	if !q.At.IsZero() {
		// First: the fold goes on when the caller stops waiting, for the
		// call that asks again (see pageAt).
		if page, more, ok, err = k.ledger.pageAt(ctx, q.At, q.After, q.Limit); err != nil {
			return nil, "", "", err
		}
	}
	h, err := k.store.Head(ctx)
	if err != nil {
		return nil, "", "", err
	}
	if q.At.IsZero() {
		page, more, ok = k.ledger.page(q.After, q.Limit)
	}
	if !ok {
		return nil, "", "", refuse(ErrInvalid, "INVALID_REQUEST", "after_item_id %q is not an item of the ledger at the instant asked", q.After)
	}
	if err := k.ledger.fill(ctx, page); err != nil {
		return nil, "", "", err
	}
	if more {
		next = page[len(page)-1].Item.GetCanonItemId()
	}
	return page, h.String(), next, nil
}

// BindTask binds a task to a contract item and the one agent that acts on
// it. The item's binding must name the task, except for a handoff-derived
// child, which binds the child task. Rebinding revokes the task's
// outstanding capabilities.
func (k *Kernel) BindTask(ctx context.Context, actor, taskID, itemID, agent string) (canon.Classified, error) {
	if taskID == "" || itemID == "" || agent == "" {
		return canon.Classified{}, refuse(ErrInvalid, "INVALID_REQUEST", "task_id, contract_item_id and agent are required")
	}
	c, ok := k.ledger.item(itemID)
	if ok {
		c = k.ledger.filled(c)
	}
	switch {
	case !ok:
		return c, refuse(ErrNotFound, "ITEM_NOT_FOUND", "canon item %q does not exist", itemID)
	case c.Item.GetContract() == nil:
		return c, refuse(ErrInvalid, "NOT_A_CONTRACT", "canon item %q is a %s, not a contract", itemID, c.Item.GetKind())
	case c.Item.GetHandoffParentRef() == "" && c.Item.GetContract().GetBinding().GetTaskId() != taskID:
		return c, refuse(ErrInvalid, "BINDING_MISMATCH", "contract %q is bound to task %q, not %q", itemID, c.Item.GetContract().GetBinding().GetTaskId(), taskID)
	}
	err := k.store.Update(ctx, func(tx store.Tx) error {
		return k.bind(tx, k.clock(), taskID, itemID, agent)
	})
	if err != nil {
		return c, err
	}
	k.log.Info("task bound", zap.String("task", taskID), zap.String("item", itemID), zap.String("agent", agent), zap.String("actor", actor), zap.String("class", c.Class.String()))
	return c, nil
}

// bind binds a task to an item and agent in tx, revoking what a previous
// binding issued.
func (k *Kernel) bind(tx store.Tx, now time.Time, taskID, itemID, agent string) error {
	prev, err := tx.Task(taskID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	next := store.Task{ItemID: itemID, Agent: agent}
	if prev == next {
		return nil
	}
	if err := tx.BindTask(taskID, next, now); err != nil {
		return err
	}
	if _, err := tx.Append(now, "task.bind", taskID, []byte(itemID+" for "+agent)); err != nil {
		return err
	}
	if prev.ItemID != "" {
		note := fmt.Sprintf("task rebound from %s (%s) to %s (%s)", prev.ItemID, prev.Agent, itemID, agent)
		if _, err := k.revoke(tx, "", taskID, note, now); err != nil {
			return err
		}
	}
	return nil
}

// ApprovalQuery selects a page of approvals.
type ApprovalQuery struct {
	// State keeps the approvals in this state; unspecified means pending.
	State kernelv1.ApprovalState
	// After keeps the approvals whose identifier sorts after it.
	After string
	// Limit bounds the page; it is at least 1.
	Limit int
}

// Approvals lists a page of approvals in one state, in their identifiers'
// order, which is the order they were asked for, and the identifier to
// continue after (empty on the last page).
func (k *Kernel) Approvals(ctx context.Context, q ApprovalQuery) (out []*kernelv1.Approval, next string, err error) {
	state := q.State
	if state == kernelv1.ApprovalState_APPROVAL_STATE_UNSPECIFIED {
		state = kernelv1.ApprovalState_APPROVAL_STATE_PENDING
	}
	rows, next, err := readPage(ctx, k, q.Limit, func(tx store.Tx, n int) ([]store.Approval, error) {
		return tx.ApprovalsAfter(state, q.After, n)
	}, func(a store.Approval) string { return a.Body.GetApprovalId() })
	if err != nil {
		return nil, "", err
	}
	out = make([]*kernelv1.Approval, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.Body)
	}
	return out, next, nil
}

// DecideApproval approves or rejects a pending approval. The approver is a
// governance identity: never the agent that asked.
func (k *Kernel) DecideApproval(ctx context.Context, actor, id string, approve bool, note string) (*kernelv1.Approval, error) {
	var out *kernelv1.Approval
	err := k.store.Update(ctx, func(tx store.Tx) error {
		now := k.clock()
		a, err := tx.Approval(id)
		if errors.Is(err, store.ErrNotFound) {
			return refuse(ErrNotFound, "APPROVAL_NOT_FOUND", "approval %q does not exist", id)
		}
		if err != nil {
			return err
		}
		if st := a.Body.GetState(); st != kernelv1.ApprovalState_APPROVAL_STATE_PENDING {
			return refuse(ErrStale, "APPROVAL_NOT_PENDING", "approval %q is %s, not pending", id, st)
		}
		a.Body.State = kernelv1.ApprovalState_APPROVAL_STATE_REJECTED
		if approve {
			a.Body.State = kernelv1.ApprovalState_APPROVAL_STATE_APPROVED
		}
		a.Body.DecidedBy, a.Body.Note = actor, note
		if err := tx.UpdateApproval(a); err != nil {
			return err
		}
		if _, err := tx.Append(now, "approval.decide", id, []byte(a.Body.GetState().String()+" by "+actor)); err != nil {
			return err
		}
		out = a.Body
		return nil
	})
	if err != nil {
		return nil, err
	}
	k.log.Info("approval", zap.String("approval", id), zap.String("state", out.GetState().String()), zap.String("actor", actor))
	return out, nil
}

// CommitmentQuery selects a page of commitments.
type CommitmentQuery struct {
	// TaskID, when set, keeps this task's commitments.
	TaskID string
	// After keeps the commitments whose capability identifier sorts after
	// it.
	After string
	// Limit bounds the page; it is at least 1.
	Limit int
}

// Commitments lists a page of commitments in their capability
// identifiers' order, which is the order of issue, and the identifier to
// continue after (empty on the last page).
func (k *Kernel) Commitments(ctx context.Context, q CommitmentQuery) (out []*agentv1.Commitment, next string, err error) {
	now := k.clock()
	caps, next, err := readPage(ctx, k, q.Limit, func(tx store.Tx, n int) ([]store.Capability, error) {
		return tx.CapabilitiesAfter(q.TaskID, q.After, n)
	}, func(c store.Capability) string { return c.CapabilityID })
	if err != nil {
		return nil, "", err
	}
	out = make([]*agentv1.Commitment, 0, len(caps))
	for _, c := range caps {
		out = append(out, commitment(c, now))
	}
	return out, next, nil
}

// Entries pages through the journal.
func (k *Kernel) Entries(ctx context.Context, after int64, limit int) ([]journal.Entry, error) {
	return k.store.Entries(ctx, after, limit)
}

// VerifyLog recomputes the journal's Merkle tree and checks it against
// itself and the trusted tree heads (the kernel's signed checkpoints).
func (k *Kernel) VerifyLog(ctx context.Context, trusted []journal.TreeHead) (journal.Report, error) {
	return k.store.VerifyJournal(ctx, trusted)
}

// ReceiptKinds are the journal kinds whose body is a signed envelope, with
// the receipt's identifier as the entry's ref.
var ReceiptKinds = []string{"evidence", "decision", "capability", "effect", "refusal", "readback"}
