package authority

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ambitkernel/ambit/kernel/capability"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"go.uber.org/zap"
)

// Read names a read an evidence adapter is about to make.
type Read struct {
	// Sidecar is the evidence adapter asking, as the kernel authenticated
	// it; a per-agent one reads only for its agent's tasks.
	Sidecar   string
	Agent     string // as the evidence adapter authenticated it
	TaskID    string
	Purpose   string
	Source    string
	RecordKey string
	Fields    []string
}

// ReadGrant is how an authorised read must be made.
type ReadGrant = kernelv1.AuthorizeReadResponse

// AuthorizeRead checks a read against the task's canonical contract before
// anything is read: the agent, the purpose, the source, every field, and
// the record — a read stays on the task's bound record. It answers the
// provenance, the derived fields' expressions, the quarantined fields and
// the confinement the adapter must apply, or refuses naming what is outside
// the grant. An evidence adapter that serves one agent reads only for that
// agent's tasks.
func (k *Kernel) AuthorizeRead(ctx context.Context, r Read) (*ReadGrant, error) {
	if r.Agent == "" || r.TaskID == "" || r.Purpose == "" || r.Source == "" || r.RecordKey == "" || len(r.Fields) == 0 {
		return nil, refuse(ErrInvalid, "INVALID_REQUEST", "agent, task_id, purpose, source, record_key and fields are required")
	}
	var out *ReadGrant
	err := k.store.View(ctx, func(tx store.Tx) error {
		b, err := k.taskContract(tx, r.TaskID)
		if err != nil {
			return err
		}
		if err := k.serves.forTask(r.Sidecar, r.TaskID, b.agent); err != nil {
			return err
		}
		if err := b.actor(r.TaskID, r.Agent); err != nil {
			return err
		}
		out, err = k.checkRead(b, r)
		return err
	})
	if err != nil {
		k.log.Info("read refused", zap.String("task", r.TaskID), zap.String("source", r.Source),
			zap.String("record", r.RecordKey), zap.Strings("fields", r.Fields), zap.Error(err))
	}
	return out, err
}

// checkRead is the read rule, shared by the authorisation before a read and
// the recording after it.
func (k *Kernel) checkRead(b *bound, r Read) (*ReadGrant, error) {
	if !b.canonical() {
		return nil, refuse(ErrDenied, "CONTRACT_NOT_CANONICAL", "task %q is bound to contract %q, which is %s: no evidence may be read under it",
			r.TaskID, b.itemID, b.class)
	}
	if k.clock().After(b.eval.ValidUntil) {
		return nil, refuse(ErrDenied, "CONTRACT_EXPIRED", "the contract of task %q expired at %s", r.TaskID, b.eval.ValidUntil.Format(time.RFC3339))
	}
	if p := b.eval.Purpose; p != "*" && r.Purpose != p {
		return nil, refuse(ErrDenied, "PURPOSE_MISMATCH", "task %q is for purpose %q, not %q", r.TaskID, p, r.Purpose)
	}
	i := slices.IndexFunc(b.proto.GetEvidence().GetSources(), func(s *contractv1.SourceGrant) bool { return s.GetName() == r.Source })
	if i < 0 {
		return nil, refuse(ErrDenied, "SOURCE_OUTSIDE_GRANT", "source %q is outside the evidence grant of task %q", r.Source, r.TaskID)
	}
	src := b.proto.GetEvidence().GetSources()[i]
	grant := b.eval.Sources[i].Fields
	if grant == nil {
		grant = b.eval.Fields
	}
	var outside []string
	for _, f := range r.Fields {
		if !slices.Contains(grant, f) && !slices.Contains(outside, f) {
			outside = append(outside, f)
		}
	}
	if len(outside) > 0 {
		slices.Sort(outside)
		return nil, refuse(ErrDenied, "FIELDS_OUTSIDE_GRANT", "fields outside the evidence grant of task %q: %v", r.TaskID, outside)
	}
	out := &ReadGrant{Provenance: src.GetProvenance()}
	for _, d := range src.GetDerived() {
		if slices.Contains(r.Fields, d.GetName()) {
			out.Derived = append(out.Derived, d)
		}
	}
	for _, q := range src.GetQuarantined() {
		if slices.Contains(r.Fields, q) {
			out.Quarantined = append(out.Quarantined, q)
		}
	}
	// Reads stay on the task's record: its own source by key, any other
	// source through the field that links a row to the record.
	if rec := b.proto.GetBinding().GetRecord(); rec != nil {
		switch {
		case r.Source == rec.GetSource():
			if r.RecordKey != rec.GetKey() {
				return nil, refuse(ErrDenied, "RECORD_OUTSIDE_BINDING", "task %q is bound to %s/%s, not %s/%s",
					r.TaskID, rec.GetSource(), rec.GetKey(), r.Source, r.RecordKey)
			}
			if v := b.eval.StateVersion; v != "*" {
				out.BoundStateVersion = v
			}
		case src.GetRecordField() != "":
			out.ConfineField, out.ConfineValue = src.GetRecordField(), rec.GetKey()
		}
	}
	return out, nil
}

// Recorded is what recording evidence changed.
type Recorded struct {
	StateChanged bool
	Revoked      []string
	// LogIndex is the receipt's leaf index in the log.
	LogIndex uint64
}

// RecordEvidence logs a signed evidence receipt before the adapter releases
// it, checking the read again as it was made. When the record's state
// version differs from the last one seen, every outstanding capability and
// open approval on the record is revoked (coupling rule 3: state change
// cancels inherited reach); when it differs from the version the task is
// bound to, the change is kept and the read refused. An evidence adapter
// that serves one agent records only for that agent's tasks.
func (k *Kernel) RecordEvidence(ctx context.Context, caller string, env *receiptv1.Envelope) (Recorded, error) {
	var r receiptv1.EvidenceReceipt
	if err := k.ev.Open(env, caller, &r); err != nil {
		return Recorded{}, refuse(ErrInvalid, "RECEIPT_INVALID", "evidence receipt: %v", err)
	}
	switch {
	case r.GetReceiptId() == "" || r.GetStateVersion() == "" || r.GetReadAt() == nil:
		return Recorded{}, refuse(ErrInvalid, "RECEIPT_INVALID", "evidence receipt needs receipt_id, state_version and read_at")
	case contractv1.Provenance_name[int32(r.GetProvenance())] == "" || r.GetProvenance() == contractv1.Provenance_PROVENANCE_UNSPECIFIED:
		return Recorded{}, refuse(ErrInvalid, "RECEIPT_INVALID", "evidence receipt %s has no known provenance class (%d)", r.GetReceiptId(), r.GetProvenance())
	}
	var out Recorded
	var stale error
	// Hashed outside the writer, which runs the update's function.
	digest, hash := envelope.Digest(env), envelope.Hash(env)
	err := k.store.Update(ctx, func(tx store.Tx) error {
		now := k.clock()
		b, err := k.taskContract(tx, r.GetTaskId())
		if err != nil {
			return err
		}
		if err := k.serves.forTask(caller, r.GetTaskId(), b.agent); err != nil {
			return err
		}
		grant, err := k.checkRead(b, Read{TaskID: r.GetTaskId(), Purpose: b.eval.Purpose, Source: r.GetSource(), RecordKey: r.GetRecordKey(), Fields: r.GetFields()})
		if err != nil {
			return err
		}
		if s := b.eval.Subject; s != "*" && r.GetSubject() != s {
			return refuse(ErrDenied, "SUBJECT_OUTSIDE_GRANT", "record %s/%s belongs to another subject than task %q's", r.GetSource(), r.GetRecordKey(), r.GetTaskId())
		}
		if !sameSet(r.GetQuarantined(), grant.GetQuarantined()) {
			return refuse(ErrInvalid, "RECEIPT_INVALID", "evidence receipt %s does not mark the quarantined fields the grant names", r.GetReceiptId())
		}
		inserted, err := tx.InsertEvidence(store.Evidence{
			ReceiptID: r.GetReceiptId(), TaskID: r.GetTaskId(), EnvelopeHash: digest, Source: r.GetSource(),
			RecordKey: r.GetRecordKey(), StateVersion: r.GetStateVersion(), ReadAt: r.GetReadAt().AsTime(),
		})
		if err != nil {
			return refuse(ErrExists, "RECEIPT_CONFLICT", "%v", err)
		}
		tx.OnCommit(func() { k.rememberEvidence(env, digest, &r, hash) })
		if !inserted {
			out.LogIndex, err = tx.LogIndex("evidence", r.GetReceiptId())
			return err // a retry of a recorded receipt
		}
		index, err := k.appendEnvelope(tx, now, "evidence", r.GetReceiptId(), env)
		if err != nil {
			return err
		}
		out.LogIndex = index
		newer, err := tx.NewerRead(r.GetSource(), r.GetRecordKey(), r.GetReadAt().AsTime())
		if err != nil || newer {
			return err // a late receipt never moves the record's state back
		}
		if out, err = k.noteVersion(tx, r.GetSource(), r.GetRecordKey(), r.GetStateVersion(), now); err != nil {
			return err
		}
		out.LogIndex = index
		if v := grant.GetBoundStateVersion(); v != "" && r.GetStateVersion() != v {
			// The change is recorded (and has revoked what it must); the
			// stale task gets nothing from this read.
			stale = refuse(ErrStale, "STATE_VERSION_CHANGED", "task %q is bound to %s/%s at %s, but the record is now at %s: the task must be re-bound",
				r.GetTaskId(), r.GetSource(), r.GetRecordKey(), v, r.GetStateVersion())
		}
		return nil
	})
	if err != nil {
		return Recorded{}, err
	}
	k.log.Info("evidence", zap.String("receipt", r.GetReceiptId()), zap.String("task", r.GetTaskId()),
		zap.String("source", r.GetSource()), zap.String("record", r.GetRecordKey()), zap.Strings("fields", r.GetFields()),
		zap.String("state_version", r.GetStateVersion()), zap.Bool("state_changed", out.StateChanged), zap.Strings("revoked", out.Revoked))
	return out, stale
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// noteVersion records a record's observed state version and, when it
// differs from the last one seen, revokes what depended on the old one.
func (k *Kernel) noteVersion(tx store.Tx, source, key, version string, now time.Time) (Recorded, error) {
	var out Recorded
	prev, seen, err := tx.RecordVersion(source, key)
	if err != nil {
		return out, err
	}
	if seen && prev == version {
		return out, nil
	}
	if err := tx.SetRecordVersion(source, key, version, now); err != nil {
		return out, err
	}
	if !seen {
		return out, nil
	}
	out.StateChanged = true
	note := fmt.Sprintf("state version changed: %s → %s", prev, version)
	if version == "" {
		note = fmt.Sprintf("record removed (was %s)", prev)
	}
	out.Revoked, err = k.revoke(tx, source+"/"+key, "", note, now)
	return out, err
}

// ReportStateChange notes a record's state version as an evidence adapter
// watching it observed it at observedAt, and revokes at once what depended
// on an older version. A report observed before a read the kernel already
// recorded is stale: it changes nothing.
func (k *Kernel) ReportStateChange(ctx context.Context, sidecar, source, key, version string, observedAt time.Time) (Recorded, error) {
	if source == "" || key == "" {
		return Recorded{}, refuse(ErrInvalid, "INVALID_REQUEST", "source and record_key are required")
	}
	var out Recorded
	err := k.store.Update(ctx, func(tx store.Tx) error {
		if err := k.watchedBy(tx, sidecar, source, key); err != nil {
			return err
		}
		if !observedAt.IsZero() {
			newer, err := tx.NewerRead(source, key, observedAt)
			if err != nil || newer {
				return err
			}
		}
		var err error
		out, err = k.noteVersion(tx, source, key, version, k.clock())
		return err
	})
	if err != nil {
		return Recorded{}, err
	}
	if out.StateChanged {
		k.log.Info("state change", zap.String("source", source), zap.String("record", key),
			zap.String("state_version", version), zap.Strings("revoked", out.Revoked))
	}
	return out, nil
}

// watchWindow is how long after its last read a record stays watched, and
// so the longest evidence from that read counts for in a decision,
// whatever the contract allows (see [Kernel.compiled]).
const watchWindow = 24 * time.Hour

// WatchedRecords lists the records whose changes matter — read within the
// watch window, or depended on by outstanding capabilities not yet
// expired and open approvals — with the version the kernel last saw of
// each. An evidence adapter that serves one agent sees only that agent's.
func (k *Kernel) WatchedRecords(ctx context.Context, sidecar string) ([]*kernelv1.WatchedRecord, error) {
	var out []*kernelv1.WatchedRecord
	err := k.store.View(ctx, func(tx store.Tx) error {
		now := k.clock()
		records, err := tx.WatchedRecords(now.Add(-watchWindow), now, k.serves[sidecar])
		if err != nil {
			return err
		}
		out = make([]*kernelv1.WatchedRecord, len(records))
		for i, r := range records {
			out[i] = &kernelv1.WatchedRecord{Source: r.Source, RecordKey: r.Key, StateVersion: r.StateVersion}
		}
		return nil
	})
	return out, err
}

// watchedBy refuses a report on a record from an evidence adapter that
// serves one agent unless that agent's tasks read it or depend on it: a
// per-agent sidecar cannot revoke what other agents hold on records its
// agent never saw.
func (k *Kernel) watchedBy(tx store.Tx, sidecar, source, key string) error {
	agent, ok := k.serves[sidecar]
	if !ok {
		return nil
	}
	now := k.clock()
	watched, err := tx.WatchedBy(now.Add(-watchWindow), now, agent, source, key)
	if err != nil {
		return err
	}
	if !watched {
		return refuse(ErrDenied, "RECORD_OUTSIDE_BINDING", "sidecar %q serves agent %q, whose tasks have not read record %s/%s", sidecar, agent, source, key)
	}
	return nil
}

// revoke revokes outstanding capabilities and cancels open approvals on a
// record or of a task, journaling each.
func (k *Kernel) revoke(tx store.Tx, record, taskID, note string, now time.Time) ([]string, error) {
	caps, err := tx.Outstanding(record, taskID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range caps {
		if capability.Next(c.Status, capability.Revoke).Result != capability.Move {
			continue
		}
		c.Status = capability.Revoked
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

// Redeem redeems a capability for exactly the call it binds. The first
// redemption of an unexpired, unrevoked capability whose record is still at
// its bound state version succeeds once; a repeat with the same key while
// the commitment is open is a retry; a closed, failed or revoked
// commitment refuses it (the capability package's table decides). The
// sidecar is the action adapter presenting it, as the kernel authenticated
// it: one that serves one agent redeems only that agent's capabilities.
func (k *Kernel) Redeem(ctx context.Context, sidecar string, env *receiptv1.Envelope, key, holder string) (Redeemed, error) {
	var c receiptv1.Capability
	if err := k.signed.open(k.self, k.signer.KeyID(), env, &c); err != nil {
		return Redeemed{}, refuse(ErrDenied, "CAPABILITY_INVALID", "capability: %v", err)
	}
	if key != c.GetIdempotencyKey() {
		return Redeemed{}, refuse(ErrInvalid, "IDEMPOTENCY_KEY_MISMATCH", "idempotency key %q is not the one capability %s binds", key, c.GetCapabilityId())
	}
	if holder != "" && holder != c.GetHolder() {
		return Redeemed{}, refuse(ErrDenied, "CAPABILITY_NOT_HOLDER", "capability %s was issued to another agent than %q", c.GetCapabilityId(), holder)
	}
	if err := k.serves.forCapability(sidecar, c.GetCapabilityId(), c.GetHolder()); err != nil {
		k.log.Info("redemption refused", zap.String("capability", c.GetCapabilityId()), zap.String("sidecar", sidecar), zap.Error(err))
		return Redeemed{}, err
	}
	var out Redeemed
	err := k.store.Update(ctx, func(tx store.Tx) error {
		now := k.clock()
		row, err := issued(tx, c.GetCapabilityId())
		if err != nil {
			return err
		}
		status := capability.Effective(row.Status, row.ExpiresAt, now)
		step := capability.Next(status, capability.Redeem)
		switch step.Result {
		case capability.Refuse:
			return refuseStep(step, "capability %s is %s: %s", row.CapabilityID, strings.TrimPrefix(status.String(), "COMMITMENT_STATUS_"), closedNote(row, status))
		case capability.Repeat:
			// A retry: the effect may have happened; the adapter's ledger
			// knows, and its key lets it happen at most once.
		case capability.Move:
			if row.Record != "" {
				src, key := store.SplitRecord(row.Record)
				v, ok, err := tx.RecordVersion(src, key)
				if err != nil {
					return err
				}
				if ok && v != row.StateVersion {
					return refuse(ErrStale, "STATE_VERSION_CHANGED", "capability %s was issued at %s but %s is now at %s", row.CapabilityID, row.StateVersion, row.Record, v)
				}
			}
			row.Status = step.To
			if err := tx.UpdateCapability(row); err != nil {
				return err
			}
			if _, err := tx.Append(now, "redeem", row.CapabilityID, []byte(row.IdempotencyKey)); err != nil {
				return err
			}
			out.First = true
		}
		out.Commitment = commitment(row, now)
		return nil
	})
	if err != nil {
		k.log.Info("redemption refused", zap.String("capability", c.GetCapabilityId()), zap.Error(err))
		return Redeemed{}, err
	}
	k.log.Info("redeem", zap.String("capability", c.GetCapabilityId()), zap.String("task", c.GetTaskId()), zap.Bool("first", out.First))
	return out, nil
}

func closedNote(row store.Capability, status capability.Status) string {
	switch {
	case status == capability.Verified:
		return "its effect " + row.EffectReceiptID + " is verified"
	case status == capability.Expired && row.Note == "":
		return "expired at " + row.ExpiresAt.Format(time.RFC3339)
	case row.Note != "":
		return row.Note
	}
	return "closed"
}

// issued returns a capability this kernel issued.
func issued(tx store.Tx, id string) (store.Capability, error) {
	row, err := tx.Capability(id)
	if errors.Is(err, store.ErrNotFound) {
		return row, refuse(ErrNotFound, "CAPABILITY_UNKNOWN", "capability %s was never issued by this kernel", id)
	}
	return row, err
}

// RecordEffect logs a signed effect receipt from the action adapter that
// redeemed the capability. Recording the same receipt again is a no-op.
// An action adapter that serves one agent records only effects of that
// agent's capabilities.
func (k *Kernel) RecordEffect(ctx context.Context, caller string, env *receiptv1.Envelope) (*agentv1.Commitment, uint64, error) {
	var r receiptv1.EffectReceipt
	if err := k.act.Open(env, caller, &r); err != nil {
		return nil, 0, refuse(ErrInvalid, "RECEIPT_INVALID", "effect receipt: %v", err)
	}
	out, index, err := k.settle(ctx, caller, env, settlement{
		kind: "effect", event: capability.Effect, receiptID: r.GetReceiptId(),
		capabilityID: r.GetCapabilityId(), taskID: r.GetTaskId(), key: r.GetIdempotencyKey(), call: r.GetCall(),
	})
	if err != nil {
		return nil, 0, err
	}
	k.log.Info("effect", zap.String("receipt", r.GetReceiptId()), zap.String("capability", r.GetCapabilityId()),
		zap.String("task", r.GetTaskId()), zap.String("record_ref", r.GetRecordRef()))
	return out, index, nil
}

// maxRefusalNote bounds the target's answer a refused commitment's note
// keeps; the journal keeps the whole receipt.
const maxRefusalNote = 512

// RecordRefusal logs a signed refusal receipt: the target of a redeemed
// capability's effect refused it and holds nothing of it. The commitment
// closes as REFUSED and no longer counts against the task's grant, so the
// agent may propose the effect again; the capability is not redeemed
// again. Idempotent.
func (k *Kernel) RecordRefusal(ctx context.Context, caller string, env *receiptv1.Envelope) (*agentv1.Commitment, uint64, error) {
	var r receiptv1.RefusalReceipt
	if err := k.act.Open(env, caller, &r); err != nil {
		return nil, 0, refuse(ErrInvalid, "RECEIPT_INVALID", "refusal receipt: %v", err)
	}
	out, index, err := k.settle(ctx, caller, env, settlement{
		kind: "refusal", event: capability.TargetRefusal, receiptID: r.GetReceiptId(),
		capabilityID: r.GetCapabilityId(), taskID: r.GetTaskId(), key: r.GetIdempotencyKey(), call: r.GetCall(),
		note: truncate("refused by the target: "+r.GetReason(), maxRefusalNote),
	})
	if err != nil {
		return nil, 0, err
	}
	k.log.Info("refusal", zap.String("receipt", r.GetReceiptId()), zap.String("capability", r.GetCapabilityId()),
		zap.String("task", r.GetTaskId()), zap.String("reason", r.GetReason()))
	return out, index, nil
}

// settlement is what an action adapter's signed receipt says of the
// capability it redeemed: its effect happened, or its target refused it.
type settlement struct {
	kind  string // the journal kind: "effect" or "refusal"
	event capability.Event
	// receiptID, capabilityID, taskID, key and call are the receipt's.
	receiptID, capabilityID, taskID, key string
	call                                 *contractv1.ToolCall
	// note, when set, is the commitment's note once it moves.
	note string
}

// settle journals an action adapter's receipt env, which s reads, and
// moves the capability it names by s.event; the same receipt again is
// answered as the first time, another one for the same capability is
// refused.
func (k *Kernel) settle(ctx context.Context, caller string, env *receiptv1.Envelope, s settlement) (*agentv1.Commitment, uint64, error) {
	if s.receiptID == "" {
		// The journal names the receipt by it, and a repeat is known by it.
		return nil, 0, refuse(ErrInvalid, "RECEIPT_INVALID", "%s receipt has no receipt_id", s.kind)
	}
	var out *agentv1.Commitment
	var index uint64
	err := k.store.Update(ctx, func(tx store.Tx) error {
		now := k.clock()
		row, err := issued(tx, s.capabilityID)
		if err != nil {
			return err
		}
		if err := k.serves.forCapability(caller, row.CapabilityID, row.Holder); err != nil {
			return err
		}
		if s.key != row.IdempotencyKey || s.taskID != row.TaskID || !sameCall(row, s.call) {
			return refuse(ErrInvalid, "RECEIPT_MISMATCH", "%s receipt %s does not match the call capability %s binds", s.kind, s.receiptID, row.CapabilityID)
		}
		step := capability.Next(row.Status, s.event)
		switch step.Result {
		case capability.Refuse:
			return refuseStep(step, "capability %s is %s: it takes no %s receipt", row.CapabilityID, row.Status, s.kind)
		case capability.Repeat:
			if row.EffectReceiptID != s.receiptID {
				return refuse(ErrExists, "EFFECT_CONFLICT", "capability %s is settled by %s, not %s", row.CapabilityID, row.EffectReceiptID, s.receiptID)
			}
			if index, err = tx.LogIndex(s.kind, s.receiptID); err != nil {
				return err
			}
		case capability.Move:
			row.Status = step.To
			row.EffectReceiptID = s.receiptID
			if s.note != "" {
				row.Note = s.note
			}
			if err := tx.UpdateCapability(row); err != nil {
				return err
			}
			if index, err = k.appendEnvelope(tx, now, s.kind, s.receiptID, env); err != nil {
				return err
			}
		}
		out = commitment(row, now)
		return nil
	})
	return out, index, err
}

// refuseStep refuses what a capability's life cycle refuses (step): an
// effect other than the one recorded is a conflict, anything else stale
// state.
func refuseStep(step capability.Transition, format string, args ...any) error {
	kind := ErrStale
	if step.Refusal == "EFFECT_CONFLICT" {
		kind = ErrExists
	}
	return refuse(kind, step.Refusal, format, args...)
}

// truncate cuts s to at most n bytes, at a character's boundary, marking
// the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// sameCall reports whether call is exactly the one a capability binds.
func sameCall(row store.Capability, call *contractv1.ToolCall) bool {
	c, err := parseCall(call)
	return err == nil && callHash(row.TaskID, c) == row.EffectHash
}

// RecordReadback logs a signed readback receipt and closes the commitment
// when verified, or marks it failed. A verifier that serves one agent
// reads back only that agent's effects.
func (k *Kernel) RecordReadback(ctx context.Context, caller string, env *receiptv1.Envelope) (*agentv1.Commitment, uint64, error) {
	var r receiptv1.ReadbackReceipt
	if err := k.ver.Open(env, caller, &r); err != nil {
		return nil, 0, refuse(ErrInvalid, "RECEIPT_INVALID", "readback receipt: %v", err)
	}
	ev := map[receiptv1.ReadbackStatus]capability.Event{
		receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED: capability.Verify,
		receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH: capability.Mismatch,
	}[r.GetStatus()]
	if ev == 0 {
		return nil, 0, refuse(ErrInvalid, "RECEIPT_INVALID", "readback receipt %s has no status", r.GetReceiptId())
	}
	var out *agentv1.Commitment
	var index uint64
	err := k.store.Update(ctx, func(tx store.Tx) error {
		now := k.clock()
		row, err := issued(tx, r.GetCapabilityId())
		if err != nil {
			return err
		}
		if err := k.serves.forCapability(caller, row.CapabilityID, row.Holder); err != nil {
			return err
		}
		if r.GetIdempotencyKey() != row.IdempotencyKey {
			return refuse(ErrInvalid, "RECEIPT_MISMATCH", "readback %s does not match capability %s", r.GetReceiptId(), row.CapabilityID)
		}
		step := capability.Next(row.Status, ev)
		if step.Result == capability.Refuse {
			return refuseStep(step, "capability %s is %s; a readback needs a recorded effect", row.CapabilityID, row.Status)
		}
		if row.ReadbackReceiptID == r.GetReceiptId() {
			out = commitment(row, now) // the same readback again
			index, err = tx.LogIndex("readback", r.GetReceiptId())
			return err
		}
		if r.GetEffectReceiptId() != row.EffectReceiptID {
			return refuse(ErrInvalid, "RECEIPT_MISMATCH", "readback %s checks effect %s, but the recorded effect is %s", r.GetReceiptId(), r.GetEffectReceiptId(), row.EffectReceiptID)
		}
		row.Status = step.To
		row.ReadbackReceiptID = r.GetReceiptId()
		row.Note = ""
		if step.To == capability.Failed {
			row.Note = fmt.Sprintf("readback found: %v", r.GetFindings())
		}
		if err := tx.UpdateCapability(row); err != nil {
			return err
		}
		if index, err = k.appendEnvelope(tx, now, "readback", r.GetReceiptId(), env); err != nil {
			return err
		}
		out = commitment(row, now)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	k.log.Info("readback", zap.String("receipt", r.GetReceiptId()), zap.String("capability", r.GetCapabilityId()),
		zap.String("task", r.GetTaskId()), zap.String("status", r.GetStatus().String()), zap.Strings("findings", r.GetFindings()))
	return out, index, nil
}

// commitment is a capability's commitment as it stands at now.
func commitment(c store.Capability, now time.Time) *agentv1.Commitment {
	out := &agentv1.Commitment{
		CapabilityId:      c.CapabilityID,
		DecisionId:        c.DecisionID,
		Tool:              c.Tool,
		Status:            capability.Effective(c.Status, c.ExpiresAt, now),
		EffectReceiptId:   c.EffectReceiptID,
		ReadbackReceiptId: c.ReadbackReceiptID,
		Note:              c.Note,
	}
	if out.Status == capability.Expired && c.Status != capability.Expired {
		out.Note = "expired before it was redeemed"
	}
	if c.Currency != "" {
		out.Amount = &contractv1.Money{CurrencyCode: c.Currency, MinorUnits: c.AmountMinor}
	}
	return out
}
