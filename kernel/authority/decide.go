package authority

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/kernel/capability"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/derive"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/sqldb"
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
	// records are the records the decision reads the state of: the
	// call's and the evidence's, each once.
	records  []string
	versions map[string]string
	usage    derive.Usage
	approval *store.Approval
}

// cited is a verified, recorded evidence receipt.
type cited struct {
	receipt *receiptv1.EvidenceReceipt
	ref     *receiptv1.ReceiptRef
}

// errConflict: something an optimistic decision read changed before its
// update could append it. The decision is made again.
var errConflict = errors.New("the decision's inputs changed while it was made")

// optimisticTries bounds the optimistic attempts before a decision is made
// inside the writer, where nothing can change under it.
const optimisticTries = 3

// Submit decides a proposal: gather → derive → evaluate → persist. The
// decision is in the journal before Submit returns; a refusal (invalid
// input, unknown task) changes nothing.
//
// On an exclusive store the work runs on the caller's goroutine, beside
// other decisions: reads on a read connection, evaluation, signing and
// marshalling; the writer only checks that nothing read has changed and
// appends. Usage is reserved before evaluating, so concurrent proposals on
// one task never overspend. A store other replicas write decides inside
// the writer.
func (k *Kernel) Submit(ctx context.Context, p Proposal) (*Decided, error) {
	call, err := validateProposal(&p)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var out *Decided
	var d *evaluate.Decision
	err = errConflict
	for try := 0; try < optimisticTries && errors.Is(err, errConflict) && k.store.Exclusive(); try++ {
		// A first try does not look for an earlier answer to the request
		// id: the row the append writes for it is unique, so the append
		// fails if there is one, and the next try looks.
		out, d, err = k.decideOptimistic(ctx, &p, call, try > 0)
	}
	if err != nil && !errors.Is(err, errConflict) && p.RequestID != "" {
		// A repeat is answered as it was the first time, whatever deciding
		// it again would say now.
		if prior, found, rerr := k.answered(ctx, &p, call); rerr != nil || found {
			out, err = prior, rerr
		}
	}
	if errors.Is(err, errConflict) {
		if k.store.Exclusive() {
			// Nothing else in flight on the task may count on it.
			defer k.reserved.alone(p.TaskID)()
		}
		out, d, err = k.decideInWriter(ctx, &p, call)
	}
	if err != nil {
		k.log.Info("proposal refused", zap.String("task", p.TaskID), zap.String("agent", p.Agent), zap.String("tool", p.Call.GetTool()), zap.Error(err))
		return nil, err
	}
	if out.GetRepeated() {
		k.log.Info("proposal repeated", zap.String("decision", out.GetDecisionId()), zap.String("task", p.TaskID), zap.String("request", p.RequestID))
		return out, nil
	}
	if ce := k.log.Check(zap.InfoLevel, "decision"); ce != nil {
		codes := make([]string, len(d.Reasons))
		for i, r := range d.Reasons {
			codes[i] = r.Code.String()
			if r.Constraint != "" {
				codes[i] += ":" + r.Constraint
			}
		}
		ce.Write(zap.String("decision", out.GetDecisionId()), zap.String("task", p.TaskID), zap.String("agent", p.Agent),
			zap.String("tool", call.Tool), zap.String("outcome", d.Outcome.String()),
			zap.Strings("reasons", codes), zap.String("approval", out.GetApprovalId()),
			zap.Bool("capability", out.GetCapability() != nil), zap.Duration("took", time.Since(start)))
	}
	return out, nil
}

// decideInWriter makes the whole decision inside one update.
func (k *Kernel) decideInWriter(ctx context.Context, p *Proposal, call *toolcall.Call) (*Decided, *evaluate.Decision, error) {
	var out *Decided
	var d *evaluate.Decision
	err := k.store.Update(ctx, func(tx store.Tx) error {
		now := k.clock()
		if p.RequestID != "" {
			prior, found, err := k.repeated(tx, p, call)
			if err != nil || found {
				out = prior
				return err
			}
		}
		g, err := k.plan(tx, p, call)
		if err != nil {
			return err
		}
		if err := k.readState(tx, p, call, g); err != nil {
			return err
		}
		if err := tx.ExpireDue(p.TaskID, now); err != nil {
			return err
		}
		count, sum, err := tx.Usage(p.TaskID, g.plan.Amount.Currency)
		if err != nil {
			return err
		}
		g.usage = derive.Usage{Count: count, Minor: sum}
		head, err := tx.Head()
		if err != nil {
			return err
		}
		facts, dd, err := k.evaluate(p, call, g, now)
		if err != nil {
			return err
		}
		d = dd
		w, err := k.prepare(p, call, g, facts, d, now, head)
		if err != nil {
			return err
		}
		out = w.out
		return k.write(tx, p, call, g, w)
	})
	return out, d, err
}

// decideOptimistic makes a decision outside the writer (see Submit): it
// stamps what other updates may change before reading it, and the update
// that appends the decision checks the stamps. errConflict means it must
// be made again. lookUp first looks for an earlier answer to the
// proposal's request id.
func (k *Kernel) decideOptimistic(ctx context.Context, p *Proposal, call *toolcall.Call, lookUp bool) (*Decided, *evaluate.Decision, error) {
	now := k.clock()
	keys := []string{store.BindingKey(p.TaskID)}
	stamp := k.store.Versions(keys)
	ledgerAt := k.ledger.version.Load()
	head := k.store.CommittedHead()
	var out *Decided
	var g *gathered
	err := k.store.Read(ctx, func(tx store.Tx) error {
		if lookUp && p.RequestID != "" {
			prior, found, err := k.repeated(tx, p, call)
			if err != nil || found {
				out = prior
				return err
			}
		}
		var err error
		g, err = k.plan(tx, p, call)
		return err
	})
	if err != nil || out != nil {
		return out, nil, err
	}
	// The records are known once the contract is: stamp them before the
	// read that sees their versions.
	for _, r := range g.records {
		src, key := store.SplitRecord(r)
		keys = append(keys, store.RecordKey(src, key))
	}
	stamp = append(stamp, k.store.Versions(keys[1:])...)
	others := k.reserved.reserve(p.TaskID, g.plan.Amount.Currency, g.plan.Amount.Minor)
	defer k.reserved.release(p.TaskID, g.plan.Amount.Currency, g.plan.Amount.Minor)
	// Usage is read after the reservations: a decision that released its
	// own has its capability in the committed usage by then.
	count, sum, err := k.store.Usage(ctx, p.TaskID, g.plan.Amount.Currency)
	if err != nil {
		return nil, nil, err
	}
	var due []store.Capability
	err = k.store.Read(ctx, func(tx store.Tx) error {
		if err := k.readState(tx, p, call, g); err != nil {
			return err
		}
		var err error
		due, err = tx.Due(p.TaskID, now)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	// Capabilities past their expiry stop counting; the update marks them.
	for _, c := range due {
		count--
		if c.Currency == g.plan.Amount.Currency {
			sum -= c.AmountMinor
		}
	}
	g.usage = derive.Usage{Count: count, Minor: sum}
	facts, d, err := k.evaluate(p, call, g, now)
	if err != nil {
		return nil, nil, err
	}
	if others != (derive.Usage{}) {
		// The outcome must not depend on how the others in flight turn
		// out: the same if they are all granted.
		dh, err := k.evaluateWith(p, call, g, facts, derive.Usage{Count: count + others.Count, Minor: sum + others.Minor}, now)
		if err != nil {
			return nil, nil, err
		}
		if !sameDecision(d, dh) {
			return nil, nil, errConflict
		}
	}
	w, err := k.prepare(p, call, g, facts, d, now, head)
	if err != nil {
		return nil, nil, err
	}
	err = k.store.Update(ctx, func(tx store.Tx) error {
		if tx.Changed(keys, stamp) || k.ledger.version.Load() != ledgerAt {
			return errConflict
		}
		if len(due) > 0 {
			if err := tx.ExpireDue(p.TaskID, now); err != nil {
				return err
			}
		}
		if g.approval != nil {
			// Approvals change outside any stamp: read it again here.
			if _, err := k.usableApproval(tx, p.ApprovalID, p.TaskID, callHash(p.TaskID, call)); err != nil {
				return errConflict
			}
		}
		err := k.write(tx, p, call, g, w)
		if sqldb.IsUniqueViolation(err) || errors.Is(err, store.ErrDuplicate) {
			return errConflict // the request id was answered meanwhile
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return w.out, d, nil
}

// sameDecision reports whether two decisions have one outcome for the same
// reasons.
func sameDecision(a, b *evaluate.Decision) bool {
	return a.Outcome == b.Outcome && slices.EqualFunc(a.Reasons, b.Reasons, func(x, y evaluate.Reason) bool {
		return x.Code == y.Code && x.Constraint == y.Constraint && slices.Equal(x.Items, y.Items)
	})
}

// answered is repeated in a read of its own.
func (k *Kernel) answered(ctx context.Context, p *Proposal, call *toolcall.Call) (prior *Decided, found bool, err error) {
	err = k.store.Read(ctx, func(tx store.Tx) error {
		prior, found, err = k.repeated(tx, p, call)
		return err
	})
	return prior, found, err
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

// plan reads the task's contract and the cited evidence, and plans the
// call under the contract.
func (k *Kernel) plan(tx store.Tx, p *Proposal, call *toolcall.Call) (*gathered, error) {
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
	for _, r := range append([]string{plan.Record}, evidenceRecords(g.evidence)...) {
		if r != "" && !slices.Contains(g.records, r) {
			g.records = append(g.records, r)
		}
	}
	return g, nil
}

func evidenceRecords(cs []cited) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.receipt.GetSource() + "/" + c.receipt.GetRecordKey()
	}
	return out
}

// readState reads the records' state versions and the approval the
// proposal names.
func (k *Kernel) readState(tx store.Tx, p *Proposal, call *toolcall.Call, g *gathered) error {
	for _, r := range g.records {
		src, key := store.SplitRecord(r)
		v, ok, err := tx.RecordVersion(src, key)
		if err != nil {
			return err
		}
		if ok {
			g.versions[r] = v
		}
	}
	if p.ApprovalID != "" {
		a, err := k.usableApproval(tx, p.ApprovalID, p.TaskID, callHash(p.TaskID, call))
		if err != nil {
			return err
		}
		g.approval = &a
	}
	return nil
}

// evaluate derives the facts and decides: pure, no I/O.
func (k *Kernel) evaluate(p *Proposal, call *toolcall.Call, g *gathered, now time.Time) (*evaluate.Facts, *evaluate.Decision, error) {
	facts := derive.Facts(k.input(p, call, g, g.usage, now))
	d, err := decide(&facts, g, now)
	if err != nil {
		return nil, nil, err
	}
	return &facts, d, nil
}

// evaluateWith decides again with usage u in place of g's: facts, those
// evaluate derived for g, are derived again only if u can change more of
// them than the counts.
func (k *Kernel) evaluateWith(p *Proposal, call *toolcall.Call, g *gathered, facts *evaluate.Facts, u derive.Usage, now time.Time) (*evaluate.Decision, error) {
	f, ok := derive.WithUsage(*facts, g.plan, u)
	if !ok {
		f = derive.Facts(k.input(p, call, g, u, now))
	}
	return decide(&f, g, now)
}

// input is what a decision's facts are derived from, with usage u.
func (k *Kernel) input(p *Proposal, call *toolcall.Call, g *gathered, u derive.Usage, now time.Time) *derive.Input {
	return &derive.Input{
		Contract: g.b.compiled.Compiled, Class: g.b.classIfNotCanonical(), TaskID: p.TaskID, Purpose: p.Purpose,
		Call: call, Plan: g.plan, Evidence: receipts(g.evidence), Versions: g.versions, Usage: u,
		Approved: g.approval != nil, Now: now,
	}
}

// decide evaluates facts under the task's contract.
func decide(facts *evaluate.Facts, g *gathered, now time.Time) (*evaluate.Decision, error) {
	// The evaluator writes into fixed buffers sized for the most reasons
	// a decision can have (kilobytes); reusing them and keeping only the
	// reasons found spares the collector that much per decision.
	scratch := decisions.Get().(*evaluate.Decision)
	defer decisions.Put(scratch)
	if err := evaluate.Evaluate(facts, g.b.eval, now, scratch); err != nil {
		return nil, refuse(ErrInvalid, "INVALID_REQUEST", "%v", err)
	}
	return scratch.Clone(), nil
}

// decisions holds the evaluator's scratch decisions.
var decisions = sync.Pool{New: func() any { return new(evaluate.Decision) }}

// written is a decision ready to be written: its answer, its signed
// receipts marshalled for the journal, and the rows it adds.
type written struct {
	out        *Decided
	decision   []byte
	capability []byte
	capRow     *store.Capability
	capDigest  string // of the capability's envelope
	approval   *store.Approval
	at         time.Time
}

// prepare builds, signs and marshals what a decision writes, without I/O.
func (k *Kernel) prepare(p *Proposal, call *toolcall.Call, g *gathered, facts *evaluate.Facts, d *evaluate.Decision, now time.Time, head journal.TreeHead) (*written, error) {
	out := &Decided{DecisionId: k.newID("dec-"), Decision: contract.DecisionProto(d)}
	w := &written{out: out, at: now}
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
	// The decision receipt is signed last, with the capability when there
	// is one: one signature for both, and for what concurrent decisions
	// sign meanwhile.
	records := []proto.Message{dr}
	switch {
	case d.Outcome == evaluate.Allow:
		c, row := k.issue(g, p, call, facts, out.DecisionId, now)
		w.capRow, dr.CapabilityId = &row, row.CapabilityID
		out.IdempotencyKey, out.CapabilityExpiresAt = row.IdempotencyKey, timestamppb.New(row.ExpiresAt)
		if g.approval != nil {
			dr.ApprovalId = g.approval.Body.GetApprovalId()
		}
		records = []proto.Message{c, dr}
	case d.Approvable() && g.approval == nil:
		out.ApprovalId = k.newID("apr-")
		dr.ApprovalId = out.ApprovalId
		w.approval = &store.Approval{EffectHash: callHash(p.TaskID, call), Record: g.plan.Record, Body: &kernelv1.Approval{
			ApprovalId:  out.ApprovalId,
			TaskId:      p.TaskID,
			DecisionId:  out.DecisionId,
			Call:        canonicalCall(call),
			Reasons:     out.Decision.GetReasons(),
			State:       kernelv1.ApprovalState_APPROVAL_STATE_PENDING,
			RequestedAt: timestamppb.New(now),
		}}
	}
	envs, err := k.signer.SignAll(records...)
	if err != nil {
		return nil, err
	}
	out.DecisionReceipt = envs[len(envs)-1]
	if w.decision, err = proto.Marshal(out.DecisionReceipt); err != nil {
		return nil, err
	}
	if w.capRow != nil {
		out.Capability = envs[0]
		w.capDigest = envelope.Digest(out.Capability)
		if w.capability, err = proto.Marshal(out.Capability); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// write records a prepared decision in tx: its rows, the capability's and
// the decision's journal entries, and the answer to its request id.
func (k *Kernel) write(tx store.Tx, p *Proposal, call *toolcall.Call, g *gathered, w *written) error {
	now := w.at
	if w.capRow != nil {
		if g.approval != nil {
			a := *g.approval
			a.Body = proto.CloneOf(a.Body)
			a.Body.State = kernelv1.ApprovalState_APPROVAL_STATE_CONSUMED
			if err := tx.UpdateApproval(a); err != nil {
				return err
			}
		}
		if err := tx.InsertCapability(*w.capRow); err != nil {
			return err
		}
		if _, err := tx.Append(now, "capability", w.capRow.CapabilityID, w.capability); err != nil {
			return err
		}
		id, d := w.capRow.CapabilityID, w.capDigest
		tx.OnCommit(func() { k.signed.add(id, d) })
	}
	if w.approval != nil {
		if err := tx.InsertApproval(*w.approval); err != nil {
			return err
		}
	}
	e, err := tx.Append(now, "decision", w.out.DecisionId, w.decision)
	if err != nil {
		return err
	}
	w.out.LogIndex = uint64(e.Seq - 1)
	if p.RequestID != "" {
		body, err := proto.Marshal(w.out)
		if err != nil {
			return err
		}
		if err := tx.InsertRequest(store.Request{TaskID: p.TaskID, RequestID: p.RequestID, Agent: p.Agent, CallHash: callHash(p.TaskID, call), Response: body, At: now}); err != nil {
			return err
		}
	}
	return nil
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
		if env.GetPayloadType() != evidenceType {
			return nil, refuse(ErrInvalid, "EVIDENCE_INVALID", "evidence[%d] is a %q, not an evidence receipt", i, env.GetPayloadType())
		}
		digest := envelope.Digest(env)
		e, ok := k.recorded.Get(digest)
		if !ok {
			var r receiptv1.EvidenceReceipt
			if err := proto.Unmarshal(env.GetPayload(), &r); err != nil {
				return nil, refuse(ErrInvalid, "EVIDENCE_INVALID", "evidence[%d] does not decode: %v", i, err)
			}
			e = recordedEvidence{receipt: &r, hash: envelope.Hash(env)}
		}
		r := e.receipt
		rec, err := tx.Evidence(r.GetReceiptId())
		if errors.Is(err, store.ErrNotFound) {
			return nil, refuse(ErrInvalid, "EVIDENCE_UNRECORDED", "evidence[%d] (%s) was never recorded by the kernel", i, r.GetReceiptId())
		}
		if err != nil {
			return nil, err
		}
		if rec.EnvelopeHash != digest {
			return nil, refuse(ErrInvalid, "EVIDENCE_INVALID", "evidence[%d] (%s) differs from the signed receipt the kernel recorded", i, r.GetReceiptId())
		}
		if r.GetTaskId() != taskID {
			return nil, refuse(ErrInvalid, "EVIDENCE_OTHER_TASK", "evidence[%d] (%s) was read for task %q, not %q", i, r.GetReceiptId(), r.GetTaskId(), taskID)
		}
		if seen[r.GetReceiptId()] {
			return nil, refuse(ErrInvalid, "EVIDENCE_DUPLICATE", "evidence[%d] (%s) is cited twice", i, r.GetReceiptId())
		}
		seen[r.GetReceiptId()] = true
		out = append(out, cited{receipt: r, ref: &receiptv1.ReceiptRef{ReceiptId: r.GetReceiptId(), PayloadHash: e.hash}})
	}
	return out, nil
}

// maxRecorded bounds the evidence receipts the kernel keeps decoded, and
// maxRecordedPayload the size of one it keeps, so that the memo holds at
// most a few megabytes of payload however large records are: a proposal
// cites what was read moments before, and one that cites older or larger
// evidence has it decoded again.
const (
	maxRecorded        = 1 << 12
	maxRecordedPayload = 2 << 10
)

// rememberEvidence keeps a recorded evidence receipt decoded, by its
// envelope's digest, if it is small enough (maxRecordedPayload).
func (k *Kernel) rememberEvidence(env *receiptv1.Envelope, digest string, r *receiptv1.EvidenceReceipt, hash string) {
	if len(env.GetPayload()) <= maxRecordedPayload {
		k.recorded.Put(digest, recordedEvidence{receipt: r, hash: hash})
	}
}

// recordedEvidence is an evidence receipt the kernel recorded, decoded,
// and its payload's hash ([envelope.Hash]). Its envelope's digest pins
// every byte, so an envelope with that digest decodes to it; it is shared
// by the decisions that cite it, and none changes it.
type recordedEvidence struct {
	receipt *receiptv1.EvidenceReceipt
	hash    string
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

// issue creates a one-time capability for exactly the decided call, to
// be signed, and the row that records it.
func (k *Kernel) issue(g *gathered, p *Proposal, call *toolcall.Call, f *evaluate.Facts, decisionID string, now time.Time) (*receiptv1.Capability, store.Capability) {
	expires := now.Add(k.ttl)
	if vu := g.b.eval.ValidUntil; vu.Before(expires) {
		expires = vu
	}
	id := k.newID("cap-")
	c := &receiptv1.Capability{
		CapabilityId:   id,
		DecisionId:     decisionID,
		TaskId:         p.TaskID,
		ContractHash:   g.b.hash,
		Call:           canonicalCall(call),
		Destination:    f.Destination,
		StateVersion:   f.StateVersion,
		IdempotencyKey: idempotencyKey(id),
		IssuedAt:       timestamppb.New(now),
		ExpiresAt:      timestamppb.New(expires),
		Holder:         p.Agent,
		Record:         f.Record,
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
	}
	return c, row
}

// idempotencyKey is the key the action adapter executes a capability
// under: made from the capability's identifier, so that it is as unique
// as the identifier is, with no index of keys to keep it so.
func idempotencyKey(capabilityID string) string {
	return "idem-" + strings.TrimPrefix(capabilityID, "cap-")
}

// parseCall reads a call from the wire.
func parseCall(c *contractv1.ToolCall) (*toolcall.Call, error) {
	return toolcall.Parse(c.GetTool(), c.GetArgumentsJson())
}
