package authority

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/capability"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/derive"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxEvidence bounds the receipts one proposal may cite.
const maxEvidence = 16

// Proposal is one tool call proposed by an authenticated agent.
type Proposal struct {
	Agent      string
	TaskID     string
	Purpose    string
	Call       *contractv1.ToolCall
	Evidence   []*receiptv1.Envelope
	ApprovalID string
	// RequestID, when set, makes the submission idempotent.
	RequestID string
}

// Decided is the kernel's answer to a proposal: the wire response.
type Decided = agentv1.SubmitProposalResponse

func validateProposal(p *Proposal) (*toolcall.Call, error) {
	switch {
	case p.TaskID == "":
		return nil, refuse(ErrInvalid, "INVALID_REQUEST", "task_id must not be empty")
	case p.Purpose == "":
		return nil, refuse(ErrInvalid, "INVALID_REQUEST", "purpose must not be empty")
	case len(p.Evidence) > maxEvidence:
		return nil, refuse(ErrInvalid, "INVALID_REQUEST", "at most %d evidence receipts may be cited, got %d", maxEvidence, len(p.Evidence))
	case p.Call == nil:
		return nil, refuse(ErrInvalid, "INVALID_REQUEST", "call must be set")
	}
	call, err := toolcall.Parse(p.Call.GetTool(), p.Call.GetArgumentsJson())
	if err != nil {
		return nil, refuse(ErrInvalid, "ARGUMENTS_INVALID", "call: %v", err)
	}
	return call, nil
}

// canonicalCall is the call as a capability binds it.
func canonicalCall(c *toolcall.Call) *contractv1.ToolCall {
	return &contractv1.ToolCall{Tool: c.Tool, ArgumentsJson: c.Canonical()}
}

// callHash identifies exactly one call of one task: what an approval and a
// capability are bound to.
func callHash(taskID string, c *toolcall.Call) string {
	return taskID + ":" + c.Hash()
}

// gathered is what a decision reads before anything is derived.
type gathered struct {
	b        *bound
	plan     derive.Plan
	evidence []cited
	versions map[string]string
	usage    derive.Usage
	approval *store.Approval
}

// cited is a verified, recorded evidence receipt.
type cited struct {
	receipt *receiptv1.EvidenceReceipt
	ref     *receiptv1.ReceiptRef
}

// Submit decides a proposal: gather → derive → evaluate → persist, in one
// transaction. The decision is in the journal before Submit returns; a
// refusal (invalid input, unknown task) changes nothing.
func (k *Kernel) Submit(ctx context.Context, p Proposal) (*Decided, error) {
	call, err := validateProposal(&p)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var out *Decided
	var d evaluate.Decision
	err = k.store.Update(ctx, func(tx store.Tx) error {
		now := k.clock()
		if p.RequestID != "" {
			prior, found, err := k.repeated(tx, &p, call)
			if err != nil || found {
				out = prior
				return err
			}
		}
		g, err := k.gather(tx, &p, call, now)
		if err != nil {
			return err
		}
		facts := derive.Facts(&derive.Input{
			Contract: g.b.compiled.Compiled, Class: g.b.classIfNotCanonical(), TaskID: p.TaskID, Purpose: p.Purpose,
			Call: call, Plan: g.plan, Evidence: receipts(g.evidence), Versions: g.versions, Usage: g.usage,
			Approved: g.approval != nil, Now: now,
		})
		if err := evaluate.Evaluate(&facts, g.b.eval, now, &d); err != nil {
			return refuse(ErrInvalid, "INVALID_REQUEST", "%v", err)
		}
		out, err = k.persist(tx, &p, call, g, &facts, &d, now)
		return err
	})
	if err != nil {
		k.log.Info("proposal refused", zap.String("task", p.TaskID), zap.String("agent", p.Agent), zap.String("tool", p.Call.GetTool()), zap.Error(err))
		return nil, err
	}
	if out.GetRepeated() {
		k.log.Info("proposal repeated", zap.String("decision", out.GetDecisionId()), zap.String("task", p.TaskID), zap.String("request", p.RequestID))
		return out, nil
	}
	codes := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		codes[i] = r.Code.String()
		if r.Constraint != "" {
			codes[i] += ":" + r.Constraint
		}
	}
	k.log.Info("decision",
		zap.String("decision", out.GetDecisionId()), zap.String("task", p.TaskID), zap.String("agent", p.Agent),
		zap.String("tool", call.Tool), zap.String("outcome", d.Outcome.String()),
		zap.Strings("reasons", codes), zap.String("approval", out.GetApprovalId()),
		zap.Bool("capability", out.GetCapability() != nil), zap.Duration("took", time.Since(start)))
	return out, nil
}

// repeated answers a repeat of an earlier request id with the first answer.
func (k *Kernel) repeated(tx store.Tx, p *Proposal, call *toolcall.Call) (*Decided, bool, error) {
	r, err := tx.Request(p.TaskID, p.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if r.CallHash != callHash(p.TaskID, call) || r.Agent != p.Agent {
		return nil, false, refuse(ErrInvalid, "REQUEST_ID_REUSED", "request_id %q was used for another call of task %q", p.RequestID, p.TaskID)
	}
	var out agentv1.SubmitProposalResponse
	if err := proto.Unmarshal(r.Response, &out); err != nil {
		return nil, false, err
	}
	out.Repeated = true
	return &out, true, nil
}

func (k *Kernel) gather(tx store.Tx, p *Proposal, call *toolcall.Call, now time.Time) (*gathered, error) {
	b, err := k.taskContract(tx, p.TaskID)
	if err != nil {
		return nil, err
	}
	if err := b.actor(p.TaskID, p.Agent); err != nil {
		return nil, err
	}
	plan, err := derive.PlanCall(b.compiled.Compiled, call)
	if err != nil {
		return nil, refuse(ErrInvalid, "ARGUMENTS_INVALID", "%v", err)
	}
	g := &gathered{b: b, plan: plan, versions: map[string]string{}}
	if g.evidence, err = k.openEvidence(tx, p.TaskID, p.Evidence); err != nil {
		return nil, err
	}
	records := []string{plan.Record}
	for _, c := range g.evidence {
		records = append(records, c.receipt.GetSource()+"/"+c.receipt.GetRecordKey())
	}
	for _, r := range records {
		if _, seen := g.versions[r]; seen || r == "" {
			continue
		}
		src, key := splitRecord(r)
		v, ok, err := tx.RecordVersion(src, key)
		if err != nil {
			return nil, err
		}
		if ok {
			g.versions[r] = v
		}
	}
	if err := tx.ExpireDue(p.TaskID, now); err != nil {
		return nil, err
	}
	count, sum, err := tx.Usage(p.TaskID, plan.Amount.Currency)
	if err != nil {
		return nil, err
	}
	g.usage = derive.Usage{Count: count, Minor: sum}
	if p.ApprovalID != "" {
		a, err := k.usableApproval(tx, p.ApprovalID, p.TaskID, callHash(p.TaskID, call))
		if err != nil {
			return nil, err
		}
		g.approval = &a
	}
	return g, nil
}

func (k *Kernel) persist(tx store.Tx, p *Proposal, call *toolcall.Call, g *gathered, facts *evaluate.Facts, d *evaluate.Decision, now time.Time) (*Decided, error) {
	head, err := tx.Head()
	if err != nil {
		return nil, err
	}
	out := &Decided{DecisionId: k.newID("dec-"), Decision: contract.DecisionProto(d)}
	dr := &receiptv1.DecisionReceipt{
		DecisionId:     out.DecisionId,
		TaskId:         p.TaskID,
		Agent:          p.Agent,
		ContractItemId: g.b.itemID,
		ContractHash:   g.b.hash,
		LedgerHead:     head.String(),
		Call:           canonicalCall(call),
		Facts:          contract.FactsProto(facts),
		Decision:       out.Decision,
		DecidedAt:      timestamppb.New(now),
	}
	for _, c := range g.evidence {
		dr.Evidence = append(dr.Evidence, c.ref)
	}
	switch {
	case d.Outcome == evaluate.Allow:
		capEnv, row, err := k.issue(tx, g, p, call, facts, out.DecisionId, now)
		if err != nil {
			return nil, err
		}
		out.Capability, dr.CapabilityId = capEnv, row.CapabilityID
		out.IdempotencyKey, out.CapabilityExpiresAt = row.IdempotencyKey, timestamppb.New(row.ExpiresAt)
		if g.approval != nil {
			dr.ApprovalId = g.approval.Body.GetApprovalId()
		}
	case d.Approvable() && g.approval == nil:
		out.ApprovalId = k.newID("apr-")
		dr.ApprovalId = out.ApprovalId
		a := store.Approval{EffectHash: callHash(p.TaskID, call), Record: g.plan.Record, Body: &kernelv1.Approval{
			ApprovalId:  out.ApprovalId,
			TaskId:      p.TaskID,
			DecisionId:  out.DecisionId,
			Call:        canonicalCall(call),
			Reasons:     out.Decision.GetReasons(),
			State:       kernelv1.ApprovalState_APPROVAL_STATE_PENDING,
			RequestedAt: timestamppb.New(now),
		}}
		if err := tx.InsertApproval(a); err != nil {
			return nil, err
		}
	}
	env, err := k.signer.Sign(dr)
	if err != nil {
		return nil, err
	}
	out.DecisionReceipt = env
	if out.LogIndex, err = k.appendEnvelope(tx, now, "decision", out.DecisionId, env); err != nil {
		return nil, err
	}
	if p.RequestID != "" {
		body, err := proto.Marshal(out)
		if err != nil {
			return nil, err
		}
		if err := tx.InsertRequest(store.Request{TaskID: p.TaskID, RequestID: p.RequestID, Agent: p.Agent, CallHash: callHash(p.TaskID, call), Response: body, At: now}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func receipts(cs []cited) []*receiptv1.EvidenceReceipt {
	out := make([]*receiptv1.EvidenceReceipt, len(cs))
	for i, c := range cs {
		out[i] = c.receipt
	}
	return out
}

// appendEnvelope journals a signed receipt and returns its leaf index.
func (k *Kernel) appendEnvelope(tx store.Tx, at time.Time, kind, ref string, env *receiptv1.Envelope) (uint64, error) {
	body, err := proto.Marshal(env)
	if err != nil {
		return 0, err
	}
	e, err := tx.Append(at, kind, ref, body)
	if err != nil {
		return 0, err
	}
	return uint64(e.Seq - 1), nil
}

// openEvidence accepts a cited receipt only if the kernel recorded exactly
// this envelope — payload, key id and signature — when the evidence
// adapter released it, and only for this task. The kernel verified the
// adapter's signature over those bytes when it recorded them, so an
// identical envelope is that verification, without a second signature
// check on every proposal; a re-signed or stripped envelope differs.
func (k *Kernel) openEvidence(tx store.Tx, taskID string, envs []*receiptv1.Envelope) ([]cited, error) {
	out := make([]cited, 0, len(envs))
	seen := map[string]bool{}
	for i, env := range envs {
		var r receiptv1.EvidenceReceipt
		if env.GetPayloadType() != evidenceType {
			return nil, refuse(ErrInvalid, "EVIDENCE_INVALID", "evidence[%d] is a %q, not an evidence receipt", i, env.GetPayloadType())
		}
		if err := proto.Unmarshal(env.GetPayload(), &r); err != nil {
			return nil, refuse(ErrInvalid, "EVIDENCE_INVALID", "evidence[%d] does not decode: %v", i, err)
		}
		rec, err := tx.Evidence(r.GetReceiptId())
		if errors.Is(err, store.ErrNotFound) {
			return nil, refuse(ErrInvalid, "EVIDENCE_UNRECORDED", "evidence[%d] (%s) was never recorded by the kernel", i, r.GetReceiptId())
		}
		if err != nil {
			return nil, err
		}
		if rec.EnvelopeHash != envelope.Digest(env) {
			return nil, refuse(ErrInvalid, "EVIDENCE_INVALID", "evidence[%d] (%s) differs from the signed receipt the kernel recorded", i, r.GetReceiptId())
		}
		if r.GetTaskId() != taskID {
			return nil, refuse(ErrInvalid, "EVIDENCE_OTHER_TASK", "evidence[%d] (%s) was read for task %q, not %q", i, r.GetReceiptId(), r.GetTaskId(), taskID)
		}
		if seen[r.GetReceiptId()] {
			return nil, refuse(ErrInvalid, "EVIDENCE_DUPLICATE", "evidence[%d] (%s) is cited twice", i, r.GetReceiptId())
		}
		seen[r.GetReceiptId()] = true
		out = append(out, cited{receipt: &r, ref: &receiptv1.ReceiptRef{ReceiptId: r.GetReceiptId(), PayloadHash: envelope.Hash(env)}})
	}
	return out, nil
}

var evidenceType = string((&receiptv1.EvidenceReceipt{}).ProtoReflect().Descriptor().FullName())

// usableApproval returns an APPROVED approval for exactly this call.
func (k *Kernel) usableApproval(tx store.Tx, id, taskID, hash string) (store.Approval, error) {
	a, err := tx.Approval(id)
	if errors.Is(err, store.ErrNotFound) {
		return a, refuse(ErrNotFound, "APPROVAL_NOT_FOUND", "approval %q does not exist", id)
	}
	if err != nil {
		return a, err
	}
	if a.Body.GetTaskId() != taskID || a.EffectHash != hash {
		return a, refuse(ErrInvalid, "APPROVAL_OTHER_EFFECT", "approval %q was given for a different task or call", id)
	}
	if st := a.Body.GetState(); st != kernelv1.ApprovalState_APPROVAL_STATE_APPROVED {
		return a, refuse(ErrStale, "APPROVAL_NOT_APPROVED", "approval %q is %s", id, strings.TrimPrefix(st.String(), "APPROVAL_STATE_"))
	}
	return a, nil
}

// issue creates, records and signs a one-time capability for exactly the
// decided call, and consumes the approval it used.
func (k *Kernel) issue(tx store.Tx, g *gathered, p *Proposal, call *toolcall.Call, f *evaluate.Facts, decisionID string, now time.Time) (*receiptv1.Envelope, store.Capability, error) {
	expires := now.Add(k.ttl)
	if vu := g.b.eval.ValidUntil; vu.Before(expires) {
		expires = vu
	}
	c := &receiptv1.Capability{
		CapabilityId:   k.newID("cap-"),
		DecisionId:     decisionID,
		TaskId:         p.TaskID,
		ContractHash:   g.b.hash,
		Call:           canonicalCall(call),
		Destination:    f.Destination,
		StateVersion:   f.StateVersion,
		IdempotencyKey: k.newID("idem-"),
		IssuedAt:       timestamppb.New(now),
		ExpiresAt:      timestamppb.New(expires),
		Holder:         p.Agent,
		Record:         f.Record,
	}
	env, err := k.signer.Sign(c)
	if err != nil {
		return nil, store.Capability{}, err
	}
	row := store.Capability{
		CapabilityID:   c.GetCapabilityId(),
		DecisionID:     decisionID,
		TaskID:         p.TaskID,
		Record:         f.Record,
		StateVersion:   f.StateVersion,
		IdempotencyKey: c.GetIdempotencyKey(),
		Tool:           call.Tool,
		Currency:       f.Amount.Currency,
		AmountMinor:    f.Amount.Minor,
		Status:         capability.Authorised,
		IssuedAt:       now,
		ExpiresAt:      expires,
		EffectHash:     callHash(p.TaskID, call),
		Holder:         p.Agent,
	}
	if g.approval != nil {
		row.ApprovalID = g.approval.Body.GetApprovalId()
		g.approval.Body.State = kernelv1.ApprovalState_APPROVAL_STATE_CONSUMED
		if err := tx.UpdateApproval(*g.approval); err != nil {
			return nil, store.Capability{}, err
		}
	}
	if err := tx.InsertCapability(row); err != nil {
		return nil, store.Capability{}, err
	}
	if _, err := k.appendEnvelope(tx, now, "capability", row.CapabilityID, env); err != nil {
		return nil, store.Capability{}, err
	}
	return env, row, nil
}

// parseCall reads a call from the wire.
func parseCall(c *contractv1.ToolCall) (*toolcall.Call, error) {
	return toolcall.Parse(c.GetTool(), c.GetArgumentsJson())
}
