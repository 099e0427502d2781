package client

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/serve"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Conns are the connections an agent needs: the kernel's agent listener
// and its evidence adapter, action adapter and verifier.
type Conns struct {
	Kernel, Evidence, Action, Verifier grpc.ClientConnInterface
}

// Agent works for one agent identity. It is safe for concurrent use.
type Agent struct {
	kernel   agentv1.AgentServiceClient
	evidence evidencev1.EvidenceServiceClient
	action   actionv1.ActionServiceClient
	verifier verifierv1.VerifierServiceClient
	close    func() error
}

// New builds an Agent over connections the caller made (and closes).
func New(c Conns) *Agent {
	return &Agent{
		kernel:   agentv1.NewAgentServiceClient(c.Kernel),
		evidence: evidencev1.NewEvidenceServiceClient(c.Evidence),
		action:   actionv1.NewActionServiceClient(c.Action),
		verifier: verifierv1.NewVerifierServiceClient(c.Verifier),
		close:    func() error { return nil },
	}
}

// Close closes the connections Dial made.
func (a *Agent) Close() error { return a.close() }

// Evidence is one granted read.
type Evidence struct {
	// Values are the released values: text, numbers, booleans.
	Values map[string]any
	// Receipt is the decoded receipt; Signed is the proof to cite.
	Receipt *receiptv1.EvidenceReceipt
	Signed  *receiptv1.Envelope
	// LogIndex is the receipt's leaf in the kernel's Merkle log.
	LogIndex uint64
}

// Read asks the evidence adapter for fields of one record, for a task and
// purpose. A field or source outside the grant is a PermissionDenied error
// naming it; nothing is read.
func (a *Agent) Read(ctx context.Context, task, purpose, source, key string, fields ...string) (*Evidence, error) {
	resp, err := a.evidence.Read(ctx, &evidencev1.ReadRequest{TaskId: task, Purpose: purpose, Source: source, RecordKey: key, Fields: fields})
	if err != nil {
		return nil, err
	}
	return &Evidence{Values: resp.GetValues().AsMap(), Receipt: resp.GetReceipt(), Signed: resp.GetSignedReceipt(), LogIndex: resp.GetLogIndex()}, nil
}

// Proposal is one call to propose.
type Proposal struct {
	Task, Purpose string
	Tool          string
	// Args is the arguments object: a map or a struct, encoded as JSON.
	// Integers stay exact (use int64 for money; see Money).
	Args any
	// Evidence to cite: the reads that support the call.
	Evidence []*Evidence
	// ApprovalID: an approved approval for exactly this call.
	ApprovalID string
	// RequestID makes the submission idempotent: a retry after a lost
	// reply gets the first answer.
	RequestID string
}

// Decision is the kernel's answer.
type Decision struct {
	*agentv1.SubmitProposalResponse
}

// Allowed reports an ALLOW with its capability.
func (d *Decision) Allowed() bool {
	return d.GetDecision().GetOutcome() == contractv1.Outcome_OUTCOME_ALLOW && d.GetCapability() != nil
}

// Review reports a REVIEW; ApprovalId names the approval when one can
// settle it.
func (d *Decision) Review() bool {
	return d.GetDecision().GetOutcome() == contractv1.Outcome_OUTCOME_REVIEW
}

// Denied reports a DENY.
func (d *Decision) Denied() bool {
	return d.GetDecision().GetOutcome() == contractv1.Outcome_OUTCOME_DENY
}

// Codes are the reasons' codes, e.g. "AMOUNT_EXCEEDS_HARD_LIMIT" (a failed
// constraint as "CONSTRAINT_VIOLATED:<its code>").
func (d *Decision) Codes() []string {
	var out []string
	for _, r := range d.GetDecision().GetReasons() {
		c := strings.TrimPrefix(r.GetCode().String(), "REASON_CODE_")
		if r.GetConstraint() != "" {
			c += ":" + r.GetConstraint()
		}
		out = append(out, c)
	}
	return out
}

// Propose submits a call of a declared tool.
func (a *Agent) Propose(ctx context.Context, p Proposal) (*Decision, error) {
	args, err := json.Marshal(p.Args)
	if err != nil {
		return nil, fmt.Errorf("propose %s: arguments: %w", p.Tool, err)
	}
	req := &agentv1.SubmitProposalRequest{
		TaskId: p.Task, Purpose: p.Purpose, ApprovalId: p.ApprovalID, RequestId: p.RequestID,
		Call: &contractv1.ToolCall{Tool: p.Tool, ArgumentsJson: string(args)},
	}
	for _, e := range p.Evidence {
		req.Evidence = append(req.Evidence, e.Signed)
	}
	resp, err := a.kernel.SubmitProposal(ctx, req)
	if err != nil {
		return nil, err
	}
	return &Decision{resp}, nil
}

// ErrNotAllowed is returned by Execute and Do for a decision that is not
// an ALLOW: nothing is executed.
var ErrNotAllowed = errors.New("the decision is not ALLOW: nothing executed")

// Execute has the action adapter perform exactly the allowed call. A retry
// (the same decision) returns the first effect's receipt.
func (a *Agent) Execute(ctx context.Context, d *Decision) (*actionv1.ExecuteResponse, error) {
	if !d.Allowed() {
		return nil, ErrNotAllowed
	}
	return a.action.Execute(ctx, &actionv1.ExecuteRequest{Capability: d.GetCapability(), IdempotencyKey: d.GetIdempotencyKey()})
}

// Verify has the verifier read the effect back.
func (a *Agent) Verify(ctx context.Context, d *Decision, effect *actionv1.ExecuteResponse) (*verifierv1.VerifyResponse, error) {
	return a.verifier.Verify(ctx, &verifierv1.VerifyRequest{Capability: d.GetCapability(), EffectReceipt: effect.GetSignedReceipt()})
}

// Outcome is a call taken through all three steps.
type Outcome struct {
	Decision *Decision
	Effect   *actionv1.ExecuteResponse
	Readback *verifierv1.VerifyResponse
}

// Do proposes, and on ALLOW executes and verifies. On REVIEW or DENY it
// returns the decision alone and nothing is executed.
func (a *Agent) Do(ctx context.Context, p Proposal) (*Outcome, error) {
	d, err := a.Propose(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Decision: d}
	if !d.Allowed() {
		return out, nil
	}
	if out.Effect, err = a.Execute(ctx, d); err != nil {
		return out, fmt.Errorf("execute %s: %w", p.Tool, err)
	}
	if out.Readback, err = a.Verify(ctx, d, out.Effect); err != nil {
		return out, fmt.Errorf("verify %s: %w", p.Tool, err)
	}
	return out, nil
}

// SelfView asks for operational self-facts.
func (a *Agent) SelfView(ctx context.Context, task string, facts ...string) (*agentv1.GetSelfViewResponse, error) {
	return a.kernel.GetSelfView(ctx, &agentv1.GetSelfViewRequest{TaskId: task, Facts: facts})
}

// RequestBoundaryChange files a request to widen the task's boundary as a
// governance item; the running contract does not change.
func (a *Agent) RequestBoundaryChange(ctx context.Context, task, description string) (*agentv1.RequestBoundaryChangeResponse, error) {
	return a.kernel.RequestBoundaryChange(ctx, &agentv1.RequestBoundaryChangeRequest{TaskId: task, Description: description})
}

// Reason is the machine-readable reason of a refusal from any Ambit
// process, or UNSPECIFIED for an error that carries none.
func Reason(err error) errorv1.ErrorReason { return serve.Reason(err) }

// VerifyReceipt checks an envelope's signature with its issuer's public
// key offline and decodes its payload into m (whose type must match).
func VerifyReceipt(env *receiptv1.Envelope, issuer ed25519.PublicKey, m proto.Message) error {
	return envelope.Keyring{env.GetKeyId(): issuer}.Open(env, env.GetKeyId(), m)
}
