package authority

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// Read names a read an evidence adapter is about to make.
type Read struct {
	Agent     string // as the evidence adapter authenticated it
	TaskID    string
	Source    string
	RecordKey string
	Fields    []string
}

// AuthorizeRead checks a read against the task's canonical contract before
// anything is read. It answers the provenance the contract gives the
// source, or refuses naming the field or source outside the grant.
func (k *Kernel) AuthorizeRead(ctx context.Context, r Read) (contractv1.Provenance, error) {
	if r.Agent == "" || r.TaskID == "" || r.Source == "" || r.RecordKey == "" || len(r.Fields) == 0 {
		return 0, refuse(ErrInvalid, "INVALID_READ", "agent, task_id, source, record_key and fields are required")
	}
	var prov contractv1.Provenance
	err := k.store.View(ctx, func(tx *store.Tx) error {
		b, err := k.taskContract(tx, r.TaskID)
		if err != nil {
			return err
		}
		if err := b.actor(r.TaskID, r.Agent); err != nil {
			return err
		}
		return k.checkRead(b, r, &prov)
	})
	if err != nil {
		k.log.Info("read refused", zap.String("task", r.TaskID), zap.String("source", r.Source),
			zap.String("record", r.RecordKey), zap.Strings("fields", r.Fields), zap.Error(err))
	}
	return prov, err
}

func (k *Kernel) checkRead(b *bound, r Read, prov *contractv1.Provenance) error {
	if !b.canonical() {
		return refuse(ErrDenied, "CONTRACT_NOT_CANONICAL", "task %q is bound to contract %q, which is %s: no evidence may be read under it",
			r.TaskID, b.itemID, b.class)
	}
	if k.clock().After(b.eval.ValidUntil) {
		return refuse(ErrDenied, "CONTRACT_EXPIRED", "the contract of task %q expired at %s", r.TaskID, b.eval.ValidUntil.Format(time.RFC3339))
	}
	i := slices.IndexFunc(b.eval.Sources, func(s evaluate.Source) bool { return s.Name == r.Source })
	if i < 0 {
		return refuse(ErrDenied, "SOURCE_OUTSIDE_GRANT", "source %q is outside the evidence grant of task %q", r.Source, r.TaskID)
	}
	var outside []string
	for _, f := range r.Fields {
		if !slices.Contains(b.eval.Fields, f) && !slices.Contains(outside, f) {
			outside = append(outside, f)
		}
	}
	if len(outside) > 0 {
		slices.Sort(outside)
		return refuse(ErrDenied, "FIELDS_OUTSIDE_GRANT", "fields outside the evidence grant of task %q: %v", r.TaskID, outside)
	}
	*prov = contractv1.Provenance(b.eval.Sources[i].Provenance)
	return nil
}

// Recorded is what recording evidence changed.
type Recorded struct {
	StateChanged bool
	Revoked      []string
}

// RecordEvidence logs a signed evidence receipt before the adapter releases
// it. A receipt about another subject than the contract's is refused. When
// the record's state version differs from the last one seen, every
// outstanding capability and open approval on the record is revoked
// (coupling rule 3: state change cancels inherited reach).
func (k *Kernel) RecordEvidence(ctx context.Context, caller string, env *receiptv1.Envelope) (Recorded, error) {
	var r receiptv1.EvidenceReceipt
	if err := k.ev.Open(env, caller, &r); err != nil {
		return Recorded{}, refuse(ErrInvalid, "RECEIPT_INVALID", "evidence receipt: %v", err)
	}
	if r.GetReceiptId() == "" || r.GetStateVersion() == "" || r.GetReadAt() == nil {
		return Recorded{}, refuse(ErrInvalid, "RECEIPT_INVALID", "evidence receipt needs receipt_id, state_version and read_at")
	}
	var out Recorded
	err := k.store.Update(ctx, func(tx *store.Tx) error {
		now := k.clock()
		b, err := k.taskContract(tx, r.GetTaskId())
		if err != nil {
			return err
		}
		var prov contractv1.Provenance
		if err := k.checkRead(b, Read{TaskID: r.GetTaskId(), Source: r.GetSource(), RecordKey: r.GetRecordKey(), Fields: r.GetFields()}, &prov); err != nil {
			return err
		}
		if s := b.eval.Subject; s != "*" && r.GetSubject() != s {
			return refuse(ErrDenied, "SUBJECT_OUTSIDE_GRANT", "record %s/%s belongs to another subject than task %q's", r.GetSource(), r.GetRecordKey(), r.GetTaskId())
		}
		inserted, err := tx.InsertEvidence(store.Evidence{
			ReceiptID: r.GetReceiptId(), TaskID: r.GetTaskId(), PayloadHash: envelope.Hash(env), Source: r.GetSource(),
			RecordKey: r.GetRecordKey(), StateVersion: r.GetStateVersion(), ReadAt: r.GetReadAt().AsTime(),
		})
		if err != nil {
			return refuse(ErrExists, "RECEIPT_CONFLICT", "%v", err)
		}
		if !inserted {
			return nil // a retry of a recorded receipt
		}
		if err := k.appendEnvelope(tx, now, "evidence", r.GetReceiptId(), env); err != nil {
			return err
		}
		newer, err := tx.NewerRead(r.GetSource(), r.GetRecordKey(), r.GetReadAt().AsTime())
		if err != nil || newer {
			return err // a late receipt never moves the record's state back
		}
		prev, seen, err := tx.RecordVersion(r.GetSource(), r.GetRecordKey())
		if err != nil {
			return err
		}
		if err := tx.SetRecordVersion(r.GetSource(), r.GetRecordKey(), r.GetStateVersion(), now); err != nil {
			return err
		}
		if seen && prev != r.GetStateVersion() {
			out.StateChanged = true
			note := fmt.Sprintf("state version changed: %s → %s", prev, r.GetStateVersion())
			out.Revoked, err = k.revoke(tx, r.GetSource()+"/"+r.GetRecordKey(), "", note, now)
			return err
		}
		return nil
	})
	if err != nil {
		return Recorded{}, err
	}
	k.log.Info("evidence", zap.String("receipt", r.GetReceiptId()), zap.String("task", r.GetTaskId()),
		zap.String("source", r.GetSource()), zap.String("record", r.GetRecordKey()), zap.Strings("fields", r.GetFields()),
		zap.String("state_version", r.GetStateVersion()), zap.Bool("state_changed", out.StateChanged), zap.Strings("revoked", out.Revoked))
	return out, nil
}

// revoke revokes outstanding capabilities and cancels open approvals on a
// record or of a task, journaling each.
func (k *Kernel) revoke(tx *store.Tx, record, taskID, note string, now time.Time) ([]string, error) {
	caps, err := tx.Outstanding(record, taskID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range caps {
		c.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED
		c.Note = note
		if err := tx.UpdateCapability(c); err != nil {
			return nil, err
		}
		if _, err := tx.Append(now, "revoke", c.CapabilityID, []byte(note)); err != nil {
			return nil, err
		}
		ids = append(ids, c.CapabilityID)
	}
	approvals, err := tx.OpenApprovals(record, taskID)
	if err != nil {
		return nil, err
	}
	for _, a := range approvals {
		a.Body.State = kernelv1.ApprovalState_APPROVAL_STATE_CANCELLED
		a.Body.Note = note
		if err := tx.UpdateApproval(a); err != nil {
			return nil, err
		}
		if _, err := tx.Append(now, "approval.cancel", a.Body.GetApprovalId(), []byte(note)); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// Redeemed is the answer to a redemption.
type Redeemed struct {
	First      bool
	Commitment *agentv1.Commitment
}

// Redeem redeems a capability for exactly its bound effect. The first
// redemption of an unexpired, unrevoked capability whose record is still at
// its bound state version succeeds once; a repeat with the same key while
// the commitment is open is a retry; a closed, failed or revoked
// commitment refuses it.
func (k *Kernel) Redeem(ctx context.Context, env *receiptv1.Envelope, action *contractv1.Action, key string) (Redeemed, error) {
	var c receiptv1.Capability
	if err := k.self.Open(env, k.signer.KeyID(), &c); err != nil {
		return Redeemed{}, refuse(ErrDenied, "CAPABILITY_INVALID", "capability: %v", err)
	}
	if !proto.Equal(c.GetAction(), action) {
		return Redeemed{}, refuse(ErrDenied, "EFFECT_OUTSIDE_CAPABILITY", "the requested effect differs from the one capability %s binds", c.GetCapabilityId())
	}
	if key != c.GetIdempotencyKey() {
		return Redeemed{}, refuse(ErrInvalid, "IDEMPOTENCY_KEY_MISMATCH", "idempotency key %q is not the one capability %s binds", key, c.GetCapabilityId())
	}
	var out Redeemed
	err := k.store.Update(ctx, func(tx *store.Tx) error {
		now := k.clock()
		row, err := issued(tx, c.GetCapabilityId())
		if err != nil {
			return err
		}
		switch row.Status {
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED:
			if now.After(row.ExpiresAt) {
				return refuse(ErrStale, "CAPABILITY_EXPIRED", "capability %s expired at %s", row.CapabilityID, row.ExpiresAt.Format(time.RFC3339))
			}
			if row.Record != "" {
				src, key := splitRecord(row.Record)
				v, ok, err := tx.RecordVersion(src, key)
				if err != nil {
					return err
				}
				if ok && v != row.StateVersion {
					return refuse(ErrStale, "STATE_VERSION_CHANGED", "capability %s was issued at %s but %s is now at %s", row.CapabilityID, row.StateVersion, row.Record, v)
				}
			}
			row.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
			if err := tx.UpdateCapability(row); err != nil {
				return err
			}
			if _, err := tx.Append(now, "redeem", row.CapabilityID, []byte(row.IdempotencyKey)); err != nil {
				return err
			}
			out.First = true
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED, agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED:
			// A retry: the effect may have happened; the adapter's ledger
			// knows, and its key lets it happen at most once.
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED:
			return refuse(ErrStale, "CAPABILITY_USED", "capability %s was already used: effect %s is verified", row.CapabilityID, row.EffectReceiptID)
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED:
			return refuse(ErrStale, "CAPABILITY_REVOKED", "capability %s was revoked: %s", row.CapabilityID, row.Note)
		default:
			return refuse(ErrStale, "CAPABILITY_CLOSED", "capability %s is %s: %s", row.CapabilityID, row.Status, row.Note)
		}
		out.Commitment = commitment(row)
		return nil
	})
	if err != nil {
		k.log.Info("redemption refused", zap.String("capability", c.GetCapabilityId()), zap.Error(err))
		return Redeemed{}, err
	}
	k.log.Info("redeem", zap.String("capability", c.GetCapabilityId()), zap.String("task", c.GetTaskId()), zap.Bool("first", out.First))
	return out, nil
}

// issued returns a capability this kernel issued.
func issued(tx *store.Tx, id string) (store.Capability, error) {
	row, err := tx.Capability(id)
	if errors.Is(err, store.ErrNotFound) {
		return row, refuse(ErrNotFound, "CAPABILITY_UNKNOWN", "capability %s was never issued by this kernel", id)
	}
	return row, err
}

func splitRecord(r string) (string, string) {
	for i := 0; i < len(r); i++ {
		if r[i] == '/' {
			return r[:i], r[i+1:]
		}
	}
	return r, ""
}

// RecordEffect logs a signed effect receipt from the action adapter that
// redeemed the capability. Recording the same receipt again is a no-op.
func (k *Kernel) RecordEffect(ctx context.Context, caller string, env *receiptv1.Envelope) (*agentv1.Commitment, error) {
	var r receiptv1.EffectReceipt
	if err := k.act.Open(env, caller, &r); err != nil {
		return nil, refuse(ErrInvalid, "RECEIPT_INVALID", "effect receipt: %v", err)
	}
	var out *agentv1.Commitment
	err := k.store.Update(ctx, func(tx *store.Tx) error {
		now := k.clock()
		row, err := issued(tx, r.GetCapabilityId())
		if err != nil {
			return err
		}
		if r.GetIdempotencyKey() != row.IdempotencyKey || r.GetTaskId() != row.TaskID || effectHash(row.TaskID, r.GetAction()) != row.EffectHash {
			return refuse(ErrInvalid, "RECEIPT_MISMATCH", "effect receipt %s does not match the effect capability %s binds", r.GetReceiptId(), row.CapabilityID)
		}
		switch row.Status {
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED:
			row.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED
			row.EffectReceiptID = r.GetReceiptId()
			if err := tx.UpdateCapability(row); err != nil {
				return err
			}
			if err := k.appendEnvelope(tx, now, "effect", r.GetReceiptId(), env); err != nil {
				return err
			}
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED, agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED,
			agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED:
			if row.EffectReceiptID != r.GetReceiptId() {
				return refuse(ErrExists, "EFFECT_CONFLICT", "capability %s already has effect %s, not %s", row.CapabilityID, row.EffectReceiptID, r.GetReceiptId())
			}
		default:
			return refuse(ErrStale, "CAPABILITY_NOT_REDEEMED", "capability %s is %s; an effect needs a redemption first", row.CapabilityID, row.Status)
		}
		out = commitment(row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	k.log.Info("effect", zap.String("receipt", r.GetReceiptId()), zap.String("capability", r.GetCapabilityId()),
		zap.String("task", r.GetTaskId()), zap.String("record_ref", r.GetRecordRef()))
	return out, nil
}

// RecordReadback logs a signed readback receipt and closes the commitment
// when verified, or marks it failed.
func (k *Kernel) RecordReadback(ctx context.Context, caller string, env *receiptv1.Envelope) (*agentv1.Commitment, error) {
	var r receiptv1.ReadbackReceipt
	if err := k.ver.Open(env, caller, &r); err != nil {
		return nil, refuse(ErrInvalid, "RECEIPT_INVALID", "readback receipt: %v", err)
	}
	status := map[receiptv1.ReadbackStatus]agentv1.CommitmentStatus{
		receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED: agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED,
		receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH: agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED,
	}[r.GetStatus()]
	if status == 0 {
		return nil, refuse(ErrInvalid, "RECEIPT_INVALID", "readback receipt %s has no status", r.GetReceiptId())
	}
	var out *agentv1.Commitment
	err := k.store.Update(ctx, func(tx *store.Tx) error {
		now := k.clock()
		row, err := issued(tx, r.GetCapabilityId())
		if err != nil {
			return err
		}
		if r.GetIdempotencyKey() != row.IdempotencyKey {
			return refuse(ErrInvalid, "RECEIPT_MISMATCH", "readback %s does not match capability %s", r.GetReceiptId(), row.CapabilityID)
		}
		switch row.Status {
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED:
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED, agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED:
			if row.ReadbackReceiptID == r.GetReceiptId() {
				out = commitment(row)
				return nil
			}
			// A later readback may find the record altered since: it
			// replaces the verdict, and the journal keeps both.
		default:
			return refuse(ErrStale, "COMMITMENT_NOT_EFFECTED", "capability %s is %s; a readback needs a recorded effect", row.CapabilityID, row.Status)
		}
		if r.GetEffectReceiptId() != row.EffectReceiptID {
			return refuse(ErrInvalid, "RECEIPT_MISMATCH", "readback %s checks effect %s, but the recorded effect is %s", r.GetReceiptId(), r.GetEffectReceiptId(), row.EffectReceiptID)
		}
		row.Status = status
		row.ReadbackReceiptID = r.GetReceiptId()
		row.Note = ""
		if status == agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED {
			row.Note = fmt.Sprintf("readback found: %v", r.GetFindings())
		}
		if err := tx.UpdateCapability(row); err != nil {
			return err
		}
		if err := k.appendEnvelope(tx, now, "readback", r.GetReceiptId(), env); err != nil {
			return err
		}
		out = commitment(row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	k.log.Info("readback", zap.String("receipt", r.GetReceiptId()), zap.String("capability", r.GetCapabilityId()),
		zap.String("task", r.GetTaskId()), zap.String("status", r.GetStatus().String()), zap.Strings("findings", r.GetFindings()))
	return out, nil
}

func commitment(c store.Capability) *agentv1.Commitment {
	out := &agentv1.Commitment{
		CapabilityId:      c.CapabilityID,
		DecisionId:        c.DecisionID,
		ActionType:        c.ActionType,
		Status:            c.Status,
		EffectReceiptId:   c.EffectReceiptID,
		ReadbackReceiptId: c.ReadbackReceiptID,
		Note:              c.Note,
	}
	if c.Currency != "" {
		out.Amount = &contractv1.Money{CurrencyCode: c.Currency, MinorUnits: c.AmountMinor}
	}
	return out
}
