package authority

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/money"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxEvidence bounds the receipts one proposal may cite.
const maxEvidence = 16

// Proposal is one typed proposal from an authenticated agent.
type Proposal struct {
	Agent      string
	TaskID     string
	Purpose    string
	Action     *contractv1.Action
	Evidence   []*receiptv1.Envelope
	ApprovalID string
}

// Decided is the kernel's answer to a proposal.
type Decided struct {
	DecisionID string
	Decision   *contractv1.Decision
	Receipt    *receiptv1.Envelope
	Capability *receiptv1.Envelope // on ALLOW
	ApprovalID string              // on an approvable REVIEW
}

// ValidateAction checks a typed action's shape: the edge validation every
// API that accepts an action shares.
func ValidateAction(a *contractv1.Action) error {
	switch kind := a.GetKind().(type) {
	case *contractv1.Action_Refund:
		r := kind.Refund
		switch {
		case r.GetClaimId() == "":
			return refuse(ErrInvalid, "INVALID_ACTION", "action.refund.claim_id must not be empty")
		case r.GetPayeeId() == "":
			return refuse(ErrInvalid, "INVALID_ACTION", "action.refund.payee_id must not be empty")
		}
		if err := money.CheckPositive(r.GetAmount()); err != nil {
			return refuse(ErrInvalid, "INVALID_AMOUNT", "action.refund.amount: %v", err)
		}
	case *contractv1.Action_EmailAttachment:
		if kind.EmailAttachment.GetRecipient() == "" {
			return refuse(ErrInvalid, "INVALID_ACTION", "action.email_attachment.recipient must not be empty")
		}
	case *contractv1.Action_ChangePolicy:
		if kind.ChangePolicy.GetPolicyId() == "" {
			return refuse(ErrInvalid, "INVALID_ACTION", "action.change_policy.policy_id must not be empty")
		}
	default:
		return refuse(ErrInvalid, "INVALID_ACTION", "action must be one of %v", contract.ActionTypes())
	}
	return nil
}

func validateProposal(p *Proposal) error {
	switch {
	case p.TaskID == "":
		return refuse(ErrInvalid, "INVALID_PROPOSAL", "task_id must not be empty")
	case p.Purpose == "":
		return refuse(ErrInvalid, "INVALID_PROPOSAL", "purpose must not be empty")
	case len(p.Evidence) > maxEvidence:
		return refuse(ErrInvalid, "INVALID_PROPOSAL", "at most %d evidence receipts may be cited, got %d", maxEvidence, len(p.Evidence))
	}
	return ValidateAction(p.Action)
}

// effectHash identifies exactly one effect of one task: what an approval is
// bound to.
func effectHash(taskID string, a *contractv1.Action) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a)
	h := sha256.New()
	h.Write([]byte(taskID))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// cited is a verified, recorded evidence receipt.
type cited struct {
	receipt *receiptv1.EvidenceReceipt
	ref     *receiptv1.ReceiptRef
}

// Submit decides a proposal. The decision is in the journal before Submit
// returns; a refusal (invalid input, unknown task) changes nothing.
func (k *Kernel) Submit(ctx context.Context, p Proposal) (*Decided, error) {
	if err := validateProposal(&p); err != nil {
		return nil, err
	}
	start := time.Now()
	var out *Decided
	var d evaluate.Decision
	err := k.store.Update(ctx, func(tx *store.Tx) error {
		now := k.clock()
		b, err := k.taskContract(tx, p.TaskID)
		if err != nil {
			return err
		}
		if err := b.actor(p.TaskID, p.Agent); err != nil {
			return err
		}
		evidence, err := k.openEvidence(tx, p.TaskID, p.Evidence)
		if err != nil {
			return err
		}
		facts, record, err := k.facts(tx, b, &p, evidence, now)
		if err != nil {
			return err
		}
		hash := effectHash(p.TaskID, p.Action)
		var approval *store.Approval
		if p.ApprovalID != "" {
			a, err := k.usableApproval(tx, p.ApprovalID, p.TaskID, hash)
			if err != nil {
				return err
			}
			approval = &a
			facts.ApprovalPresent = true
		}
		if err := evaluate.Evaluate(&facts, b.eval, now, &d); err != nil {
			return refuse(ErrInvalid, "INVALID_PROPOSAL", "%v", err)
		}
		head, err := tx.Head()
		if err != nil {
			return err
		}
		out = &Decided{DecisionID: k.newID("dec-"), Decision: contract.DecisionProto(&d)}
		dr := &receiptv1.DecisionReceipt{
			DecisionId:     out.DecisionID,
			TaskId:         p.TaskID,
			Agent:          p.Agent,
			ContractItemId: b.itemID,
			ContractHash:   b.hash,
			LedgerHead:     head.String(),
			Action:         p.Action,
			Facts:          contract.FactsProto(&facts),
			Decision:       out.Decision,
			DecidedAt:      timestamppb.New(now),
		}
		for _, c := range evidence {
			dr.Evidence = append(dr.Evidence, c.ref)
		}
		switch {
		case d.Outcome == evaluate.Allow:
			capEnv, capID, err := k.issue(tx, b, &p, &facts, record, out.DecisionID, approval, now)
			if err != nil {
				return err
			}
			out.Capability, dr.CapabilityId = capEnv, capID
			if approval != nil {
				dr.ApprovalId = approval.Body.GetApprovalId()
			}
		case d.Approvable() && approval == nil:
			out.ApprovalID = k.newID("apr-")
			dr.ApprovalId = out.ApprovalID
			a := store.Approval{EffectHash: hash, Record: record, Body: &kernelv1.Approval{
				ApprovalId:  out.ApprovalID,
				TaskId:      p.TaskID,
				DecisionId:  out.DecisionID,
				Action:      p.Action,
				Reasons:     out.Decision.GetReasons(),
				State:       kernelv1.ApprovalState_APPROVAL_STATE_PENDING,
				RequestedAt: timestamppb.New(now),
			}}
			if err := tx.InsertApproval(a); err != nil {
				return err
			}
		}
		env, err := k.signer.Sign(dr)
		if err != nil {
			return err
		}
		out.Receipt = env
		return k.appendEnvelope(tx, now, "decision", out.DecisionID, env)
	})
	if err != nil {
		k.log.Info("proposal refused", zap.String("task", p.TaskID), zap.String("agent", p.Agent), zap.Error(err))
		return nil, err
	}
	codes := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		codes[i] = r.Code.String()
	}
	k.log.Info("decision",
		zap.String("decision", out.DecisionID), zap.String("task", p.TaskID), zap.String("agent", p.Agent),
		zap.String("action", contract.ActionType(p.Action)), zap.String("outcome", d.Outcome.String()),
		zap.Strings("reasons", codes), zap.String("approval", out.ApprovalID),
		zap.Bool("capability", out.Capability != nil), zap.Duration("took", time.Since(start)))
	return out, nil
}

func (k *Kernel) appendEnvelope(tx *store.Tx, at time.Time, kind, ref string, env *receiptv1.Envelope) error {
	body, err := proto.Marshal(env)
	if err != nil {
		return err
	}
	_, err = tx.Append(at, kind, ref, body)
	return err
}

// openEvidence accepts a cited receipt only if the kernel recorded exactly
// its bytes when the evidence adapter released it, and only for this task.
// The kernel verified the adapter's signature over those bytes when it
// recorded them, so a matching payload hash is that verification, without
// paying for a second signature check on every proposal.
func (k *Kernel) openEvidence(tx *store.Tx, taskID string, envs []*receiptv1.Envelope) ([]cited, error) {
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
		hash := envelope.Hash(env)
		rec, err := tx.Evidence(r.GetReceiptId())
		if errors.Is(err, store.ErrNotFound) {
			return nil, refuse(ErrInvalid, "EVIDENCE_UNRECORDED", "evidence[%d] (%s) was never recorded by the kernel", i, r.GetReceiptId())
		}
		if err != nil {
			return nil, err
		}
		if rec.PayloadHash != hash {
			return nil, refuse(ErrInvalid, "EVIDENCE_INVALID", "evidence[%d] (%s) differs from the receipt the kernel recorded", i, r.GetReceiptId())
		}
		if r.GetTaskId() != taskID {
			return nil, refuse(ErrInvalid, "EVIDENCE_OTHER_TASK", "evidence[%d] (%s) was read for task %q, not %q", i, r.GetReceiptId(), r.GetTaskId(), taskID)
		}
		if seen[r.GetReceiptId()] {
			return nil, refuse(ErrInvalid, "EVIDENCE_DUPLICATE", "evidence[%d] (%s) is cited twice", i, r.GetReceiptId())
		}
		seen[r.GetReceiptId()] = true
		out = append(out, cited{receipt: &r, ref: &receiptv1.ReceiptRef{ReceiptId: r.GetReceiptId(), PayloadHash: hash}})
	}
	return out, nil
}

var evidenceType = string((&receiptv1.EvidenceReceipt{}).ProtoReflect().Descriptor().FullName())

// actionRecord is the record ("source/key") an action concerns: a refund
// concerns its claim, in the source the contract binds; an action naming no
// record concerns the bound one.
func actionRecord(c *contractv1.Contract, a *contractv1.Action, ev []cited) string {
	claim := a.GetRefund().GetClaimId()
	r := c.GetBinding().GetRecord()
	switch {
	case claim == "" && r != nil:
		// An action that names no record acts within the task's record.
		return r.GetSource() + "/" + r.GetKey()
	case claim == "":
		return ""
	case r != nil:
		return r.GetSource() + "/" + claim
	}
	for _, e := range ev {
		if e.receipt.GetRecordKey() == claim {
			return e.receipt.GetSource() + "/" + claim
		}
	}
	return ""
}

// facts derives the evaluator's input from the kernel's own records: the
// evidence from signed receipts, the state from the last version observed,
// counts and amounts from the task's capabilities.
func (k *Kernel) facts(tx *store.Tx, b *bound, p *Proposal, ev []cited, now time.Time) (evaluate.Facts, string, error) {
	c := b.proto
	record := actionRecord(c, p.Action, ev)
	f := evaluate.Facts{
		Purpose:      p.Purpose,
		Record:       record,
		ActionType:   contract.ActionType(p.Action),
		Irreversible: contract.IsIrreversible(c, contract.ActionType(p.Action)),
	}
	if !b.canonical() {
		f.ContractClass = b.class.String()
	}
	// The state read is the latest cited read of the action's record (of
	// any record when the action names none).
	var stateRead *receiptv1.EvidenceReceipt
	bindingSubject := c.GetBinding().GetSubject()
	foreign := false
	for _, e := range ev {
		r := e.receipt
		age := now.Sub(r.GetReadAt().AsTime())
		// Round up: evidence one nanosecond past the limit is too old.
		secs := int64((age + time.Second - 1) / time.Second)
		if age < 0 {
			secs = 0
		}
		f.Evidence = append(f.Evidence, evaluate.Evidence{
			Source:     r.GetSource(),
			Record:     r.GetSource() + "/" + r.GetRecordKey(),
			Fields:     r.GetFields(),
			AgeSeconds: secs,
			Provenance: evaluate.Provenance(r.GetProvenance()),
		})
		isRecord := r.GetSource()+"/"+r.GetRecordKey() == record
		if (isRecord || record == "") && (stateRead == nil || r.GetReadAt().AsTime().After(stateRead.GetReadAt().AsTime())) {
			stateRead = r
		}
		// Evidence about anyone but the bound subject makes the proposal
		// about them.
		if bindingSubject != "*" && r.GetSubject() != bindingSubject {
			f.Subject, foreign = r.GetSubject(), true
		}
	}
	if stateRead != nil {
		if !foreign {
			f.Subject = stateRead.GetSubject()
		}
		f.StateVersion = stateRead.GetStateVersion()
		v, ok, err := tx.RecordVersion(stateRead.GetSource(), stateRead.GetRecordKey())
		if err != nil {
			return f, "", err
		}
		if ok {
			f.CurrentStateVersion = v
		}
		if record == "" {
			record = stateRead.GetSource() + "/" + stateRead.GetRecordKey()
		}
	} else if !foreign && bindingSubject != "*" {
		// Nothing read about the record: the subject is the task's, and the
		// missing evidence surfaces as a review, not as a different task.
		f.Subject = bindingSubject
	}
	switch a := p.Action.GetKind().(type) {
	case *contractv1.Action_Refund:
		f.Amount = contract.Money(a.Refund.GetAmount())
		f.Destination = "other_customer"
		if a.Refund.GetPayeeId() == f.Subject && f.Subject != "" {
			f.Destination = "claimant"
		}
	case *contractv1.Action_EmailAttachment:
		f.Destination = "external"
	case *contractv1.Action_ChangePolicy:
		f.Destination = "policy"
	}
	used, sum, err := tx.Usage(p.TaskID, f.Amount.Currency, now)
	if err != nil {
		return f, "", err
	}
	f.ActionCount = used + 1
	if !f.Amount.IsZero() && sum > 0 {
		f.PriorAmount = evaluate.Money{Currency: f.Amount.Currency, Minor: sum}
	}
	return f, record, nil
}

// usableApproval returns an APPROVED approval for exactly this effect.
func (k *Kernel) usableApproval(tx *store.Tx, id, taskID, hash string) (store.Approval, error) {
	a, err := tx.Approval(id)
	if errors.Is(err, store.ErrNotFound) {
		return a, refuse(ErrNotFound, "APPROVAL_NOT_FOUND", "approval %q does not exist", id)
	}
	if err != nil {
		return a, err
	}
	if a.Body.GetTaskId() != taskID || a.EffectHash != hash {
		return a, refuse(ErrInvalid, "APPROVAL_OTHER_EFFECT", "approval %q was given for a different task or action", id)
	}
	if st := a.Body.GetState(); st != kernelv1.ApprovalState_APPROVAL_STATE_APPROVED {
		return a, refuse(ErrStale, "APPROVAL_NOT_APPROVED", "approval %q is %s", id, strings.TrimPrefix(st.String(), "APPROVAL_STATE_"))
	}
	return a, nil
}

// issue creates, records and signs a one-time capability for the decided
// effect, and consumes the approval it used.
func (k *Kernel) issue(tx *store.Tx, b *bound, p *Proposal, f *evaluate.Facts, record, decisionID string, approval *store.Approval, now time.Time) (*receiptv1.Envelope, string, error) {
	expires := now.Add(k.ttl)
	if vu := b.proto.GetBinding().GetValidUntil().AsTime(); vu.Before(expires) {
		expires = vu
	}
	capability := &receiptv1.Capability{
		CapabilityId:   k.newID("cap-"),
		DecisionId:     decisionID,
		TaskId:         p.TaskID,
		ContractHash:   b.hash,
		Action:         p.Action,
		Destination:    f.Destination,
		StateVersion:   f.StateVersion,
		IdempotencyKey: k.newID("idem-"),
		IssuedAt:       timestamppb.New(now),
		ExpiresAt:      timestamppb.New(expires),
		Holder:         p.Agent,
	}
	env, err := k.signer.Sign(capability)
	if err != nil {
		return nil, "", err
	}
	row := store.Capability{
		CapabilityID:   capability.GetCapabilityId(),
		DecisionID:     decisionID,
		TaskID:         p.TaskID,
		Record:         record,
		StateVersion:   f.StateVersion,
		IdempotencyKey: capability.GetIdempotencyKey(),
		ActionType:     f.ActionType,
		Currency:       f.Amount.Currency,
		AmountMinor:    f.Amount.Minor,
		Status:         agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED,
		IssuedAt:       now,
		ExpiresAt:      expires,
		EffectHash:     effectHash(p.TaskID, p.Action),
	}
	if approval != nil {
		row.ApprovalID = approval.Body.GetApprovalId()
		approval.Body.State = kernelv1.ApprovalState_APPROVAL_STATE_CONSUMED
		if err := tx.UpdateApproval(*approval); err != nil {
			return nil, "", err
		}
	}
	if err := tx.InsertCapability(row); err != nil {
		return nil, "", err
	}
	if err := k.appendEnvelope(tx, now, "capability", row.CapabilityID, env); err != nil {
		return nil, "", err
	}
	return env, row.CapabilityID, nil
}
