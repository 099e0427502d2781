package authority

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/capability"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The self-facts the kernel can answer. Anything else (thresholds,
// credentials, the contract) is never answered, whatever a contract says.
var answerable = []string{"capabilities", "uncertainty", "commitments", "expiry"}

// SelfView answers the operational self-facts asked for, and only if the
// task's reflexive aperture makes every one of them visible.
func (k *Kernel) SelfView(ctx context.Context, agent, taskID string, facts []string) (*agentv1.GetSelfViewResponse, error) {
	if taskID == "" || len(facts) == 0 {
		return nil, refuse(ErrInvalid, "INVALID_REQUEST", "task_id and at least one fact are required")
	}
	out := &agentv1.GetSelfViewResponse{}
	err := k.store.View(ctx, func(tx store.Tx) error {
		now := k.clock()
		b, err := k.taskContract(tx, taskID)
		if err != nil {
			return err
		}
		if err := b.actor(taskID, agent); err != nil {
			return err
		}
		if hidden := evaluate.OutsideView(b.eval, facts); len(hidden) > 0 {
			return refuse(ErrDenied, "SELF_FACTS_OUTSIDE_VIEW", "self facts outside the view of task %q: %v", taskID, hidden)
		}
		var unanswerable []string
		for _, f := range facts {
			if !slices.Contains(answerable, f) {
				unanswerable = append(unanswerable, f)
			}
		}
		if len(unanswerable) > 0 {
			return refuse(ErrDenied, "SELF_FACTS_NEVER_ANSWERED", "the kernel never reveals %v to an agent", unanswerable)
		}
		all, err := tx.Capabilities(taskID)
		if err != nil {
			return err
		}
		caps, omitted := listed(all, now)
		for _, f := range facts {
			switch f {
			case "capabilities":
				k.capabilities(out, b, all, now)
			case "uncertainty":
				if out.Uncertainty, err = k.uncertainty(tx, b, taskID, caps, omitted, now); err != nil {
					return err
				}
			case "commitments":
				out.Commitments = []*agentv1.Commitment{}
				for _, c := range caps {
					out.Commitments = append(out.Commitments, commitment(c, now))
				}
				out.CommitmentsOmitted = uint32(omitted)
			case "expiry":
				out.ExpiresAt = timestamppb.New(b.eval.ValidUntil)
			}
		}
		return nil
	})
	if err != nil {
		k.log.Info("self-view refused", zap.String("task", taskID), zap.Strings("facts", facts), zap.Error(err))
		return nil, err
	}
	return out, nil
}

// capabilities answers the capabilities fact: the tools the agent could
// still call (none under a non-canonical or expired contract or once the
// count is used up), their argument schemas, the sources it may read and
// the task's record and purpose. No limit is revealed. Expiry is judged at
// now, so a capability past its expiry no longer counts even before a
// write marks it.
func (k *Kernel) capabilities(out *agentv1.GetSelfViewResponse, b *bound, caps []store.Capability, now time.Time) {
	out.Capabilities = []string{}
	out.Purpose = b.eval.Purpose
	if r := b.proto.GetBinding().GetRecord(); r != nil {
		out.Record = proto.CloneOf(r)
	}
	if !b.canonical() || now.After(b.eval.ValidUntil) {
		return
	}
	var used int32
	for _, c := range caps {
		if capability.Counts(capability.Effective(c.Status, c.ExpiresAt, now)) {
			used++
		}
	}
	for _, s := range b.proto.GetEvidence().GetSources() {
		spec := &agentv1.SourceSpec{Name: s.GetName(), Provenance: s.GetProvenance(), Quarantined: slices.Clone(s.GetQuarantined())}
		if spec.Fields = contract.SourceFields(s); spec.Fields == nil {
			spec.Fields = slices.Clone(b.eval.Fields)
		}
		out.Sources = append(out.Sources, spec)
	}
	if used >= b.eval.MaxActions {
		return
	}
	for _, t := range b.proto.GetAction().GetTools() {
		out.Capabilities = append(out.Capabilities, t.GetName())
		out.Tools = append(out.Tools, &agentv1.ToolSpec{Name: t.GetName(), Description: t.GetDescription(), InputSchema: proto.CloneOf(t.GetInputSchema())})
	}
}

// MaxListedCommitments bounds the commitments a self-view lists, and the
// uncertainty it describes about them. Capabilities that expired unused or
// were revoked stop counting against a contract's action limit, so an
// agent that proposes and never executes makes them without end; unbounded,
// the view would outgrow what a client receives (4 MiB by default).
const MaxListedCommitments = 1000

// listed picks the capabilities a self-view describes, oldest first as
// caps are: every open one (authorised, redeemed, effected: it may still
// act or its outcome is still awaited), then the newest of the others,
// MaxListedCommitments in all at most; and how many it leaves out.
func listed(caps []store.Capability, now time.Time) ([]store.Capability, int) {
	if len(caps) <= MaxListedCommitments {
		return caps, 0
	}
	keep := make([]bool, len(caps))
	n := 0
	for _, open := range []bool{true, false} {
		for i := len(caps) - 1; i >= 0 && n < MaxListedCommitments; i-- {
			if !keep[i] && capability.Open(capability.Effective(caps[i].Status, caps[i].ExpiresAt, now)) == open {
				keep[i] = true
				n++
			}
		}
	}
	out := make([]store.Capability, 0, n)
	for i, c := range caps {
		if keep[i] {
			out = append(out, c)
		}
	}
	return out, len(caps) - n
}

func (k *Kernel) uncertainty(tx store.Tx, b *bound, taskID string, caps []store.Capability, omitted int, now time.Time) ([]string, error) {
	out := []string{}
	if !b.canonical() {
		out = append(out, fmt.Sprintf("contract is %s, not canonical: nothing can be granted", b.class))
	}
	if now.After(b.eval.ValidUntil) {
		out = append(out, "contract expired")
	}
	if r := b.proto.GetBinding().GetRecord(); r != nil && b.eval.StateVersion != "*" {
		v, ok, err := tx.RecordVersion(r.GetSource(), r.GetKey())
		if err != nil {
			return nil, err
		}
		if ok && v != b.eval.StateVersion {
			out = append(out, fmt.Sprintf("state version changed: the contract is bound to %s, the record is now at %s", b.eval.StateVersion, v))
		}
	}
	for _, c := range caps {
		switch capability.Effective(c.Status, c.ExpiresAt, now) {
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED:
			out = append(out, fmt.Sprintf("capability %s revoked: %s", c.CapabilityID, c.Note))
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_EXPIRED:
			out = append(out, fmt.Sprintf("capability %s expired before it was used", c.CapabilityID))
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED:
			out = append(out, fmt.Sprintf("commitment %s failed readback: %s", c.CapabilityID, c.Note))
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_REFUSED:
			out = append(out, fmt.Sprintf("commitment %s was not carried out (%s); it no longer counts", c.CapabilityID, c.Note))
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED, agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED:
			out = append(out, fmt.Sprintf("commitment %s awaits %s", c.CapabilityID, map[bool]string{true: "its effect receipt", false: "readback"}[c.Status == agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED]))
		}
	}
	if omitted > 0 {
		out = append(out, fmt.Sprintf("commitments not described: %d of %d (a view describes %d at most: the open ones, then the newest)", omitted, len(caps)+omitted, MaxListedCommitments))
	}
	approvals, err := tx.OpenApprovals("", taskID)
	if err != nil {
		return nil, err
	}
	for _, a := range approvals {
		if a.Body.GetState() == kernelv1.ApprovalState_APPROVAL_STATE_PENDING {
			out = append(out, fmt.Sprintf("approval %s pending", a.Body.GetApprovalId()))
		} else {
			out = append(out, fmt.Sprintf("approval %s granted: resubmit the proposal with it", a.Body.GetApprovalId()))
		}
	}
	return out, nil
}

// Limits on boundary-change requests: an agent cannot flood governance.
const (
	// maxOpenRequests bounds the open requests of one task.
	maxOpenRequests = 16
	// requestBurst requests per requestWindow per agent.
	requestBurst  = 10
	requestWindow = time.Minute
)

// BoundaryChange records an agent's request to change its boundary as a
// PROVISIONAL governance item with agent origin and no authority. The
// running contract is untouched (coupling rule 4). A request identical to
// one still open for the task is that request; an agent may open at most
// requestBurst per requestWindow, and a task at most maxOpenRequests.
func (k *Kernel) BoundaryChange(ctx context.Context, agent, taskID, description string) (canon.Classified, error) {
	if taskID == "" || description == "" {
		return canon.Classified{}, refuse(ErrInvalid, "INVALID_REQUEST", "task_id and description are required")
	}
	if len(description) > 4096 {
		return canon.Classified{}, refuse(ErrInvalid, "INVALID_REQUEST", "description is longer than 4096 bytes")
	}
	ref := fmt.Sprintf("agent:%s/task:%s", agent, taskID)
	id := k.newID("brq-")
	existing := ""
	err := k.ledgerUpdate(ctx, func(tx store.Tx, now time.Time) error {
		b, err := k.taskContract(tx, taskID)
		if err != nil {
			return err
		}
		if err := b.actor(taskID, agent); err != nil {
			return err
		}
		open := 0
		for _, c := range k.ledger.requests(ref) {
			it := c.Item
			if c.Class != ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL {
				continue
			}
			if it.GetText() == description {
				existing = it.GetCanonItemId()
				return nil
			}
			open++
		}
		if open >= maxOpenRequests {
			return refuse(ErrExhausted, "BOUNDARY_REQUEST_LIMITED", "task %q has %d open boundary-change requests; governance must decide them first", taskID, open)
		}
		if !k.requests.allow(agent, now) {
			return refuse(ErrExhausted, "BOUNDARY_REQUEST_LIMITED", "agent %q sent more than %d boundary-change requests in %s", agent, requestBurst, requestWindow)
		}
		return k.ledger.apply(tx, canon.Transition{
			Kind:  canon.Propose,
			At:    now,
			Actor: agent,
			Item: &ledgerv1.CanonItem{
				CanonItemId:    id,
				SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_AGENT,
				AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE,
				ProvenanceRef:  ref,
				Scope:          ledgerv1.Scope_SCOPE_TASK,
				Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
				PromotionState: ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED,
				ConflictState:  ledgerv1.ConflictState_CONFLICT_STATE_NONE,
				Kind:           ledgerv1.ItemKind_ITEM_KIND_BOUNDARY_REQUEST,
				Text:           description,
			},
		})
	})
	if err != nil {
		return canon.Classified{}, err
	}
	if existing != "" {
		c, _ := k.ledger.item(existing)
		return c, nil
	}
	c, _ := k.ledger.item(id)
	k.log.Info("boundary change requested", zap.String("item", id), zap.String("task", taskID), zap.String("agent", agent), zap.String("class", c.Class.String()))
	return c, nil
}

// window counts each agent's recent requests in a sliding window.
type window struct {
	mu   sync.Mutex
	seen map[string][]time.Time
}

// allow records a request of agent at now, unless the agent already sent
// requestBurst within requestWindow.
func (w *window) allow(agent string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string][]time.Time{}
	}
	recent := w.seen[agent][:0]
	for _, t := range w.seen[agent] {
		if now.Sub(t) < requestWindow {
			recent = append(recent, t)
		}
	}
	if len(recent) >= requestBurst {
		w.seen[agent] = recent
		return false
	}
	w.seen[agent] = append(recent, now)
	return true
}
