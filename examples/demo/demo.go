package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The two examples the demo tells, by their folder names.
const (
	ExpenseRefund = "expense-refund"
	Supportdesk   = "supportdesk"
)

// Contract reads an example's contract template and binds it to one task
// and record, valid for four hours from now.
func Contract(e *devstack.Example, task, recordKey string, now time.Time) (*contractv1.Contract, error) {
	path := e.Path(e.Files.Contract)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := contract.Parse(path, data)
	if err != nil {
		return nil, err
	}
	if c.GetBinding().GetRecord() == nil {
		return nil, fmt.Errorf("%s: the template binds no record", path)
	}
	c.Binding.TaskId = task
	c.Binding.Record.Key = recordKey
	c.Binding.ValidUntil = timestamppb.New(now.Add(4 * time.Hour))
	return c, nil
}

// ProvenanceRef is where a reviewer finds the contract an item carries:
// the example's file in the policy repository, at the contract's version.
func ProvenanceRef(e *devstack.Example, c *contractv1.Contract) string {
	return "policy-repo:examples/" + e.Name + "/" + e.Files.Contract + "@v" + c.GetVersion()
}

// ContractItem is a contract as a policy owner proposes it to the ledger.
func ContractItem(id, provenanceRef string, c *contractv1.Contract) *ledgerv1.CanonItem {
	return &ledgerv1.CanonItem{
		CanonItemId:    id,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef:  provenanceRef,
		Scope:          ledgerv1.Scope_SCOPE_TASK,
		Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
		PromotionState: ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED,
		ConflictState:  ledgerv1.ConflictState_CONFLICT_STATE_NONE,
		Kind:           ledgerv1.ItemKind_ITEM_KIND_CONTRACT,
		Contract:       c,
	}
}

// Bind proposes an example's contract for one task and record as item
// "ctr-<task>", promotes it and binds the task to agent. gov must act as
// an identity with promotion authority.
func Bind(ctx context.Context, gov kernelv1.GovernanceServiceClient, e *devstack.Example, task, recordKey, agent string, now time.Time) (*ledgerv1.ClassifiedItem, error) {
	c, err := Contract(e, task, recordKey, now)
	if err != nil {
		return nil, err
	}
	id := "ctr-" + task
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: ContractItem(id, ProvenanceRef(e, c), c)}); err != nil {
		return nil, fmt.Errorf("propose contract for %s: %w", task, err)
	}
	if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: id}); err != nil {
		return nil, fmt.Errorf("promote contract for %s: %w", task, err)
	}
	resp, err := gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: task, ContractItemId: id, Agent: agent})
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", task, err)
	}
	return resp.GetItem(), nil
}

// Story is one run of the demo: a scripted agent through sdk/client.
type Story struct {
	Stack *devstack.Stack
	// Agent works as the stack's first agent.
	Agent *client.Agent
	// Gov acts as the policy owner (it binds tasks).
	Gov kernelv1.GovernanceServiceClient
	// Ambitctl is the path of the ambitctl binary the approvals are given
	// with, as a governance identity would.
	Ambitctl string
	Out      io.Writer

	failures []string
	// used is step (a)'s decision, replayed in step (e).
	used *client.Decision
}

// NewStory connects the agent and the policy owner to a running stack.
// Close it when done.
func NewStory(ctx context.Context, st *devstack.Stack, ambitctl string, out io.Writer) (*Story, error) {
	agent, err := st.Agent(ctx, st.Agents[0])
	if err != nil {
		return nil, err
	}
	conn, err := st.Conn(ctx, st.Kernel.Governance, devstack.PolicyOwner)
	if err != nil {
		return nil, errors.Join(err, agent.Close())
	}
	return &Story{Stack: st, Agent: agent, Gov: kernelv1.NewGovernanceServiceClient(conn), Ambitctl: ambitctl, Out: out}, nil
}

// Close closes the agent's connections.
func (s *Story) Close() error { return s.Agent.Close() }

// Failures are the expectations that did not hold.
func (s *Story) Failures() []string { return s.failures }

func (s *Story) printf(format string, args ...any) { fmt.Fprintf(s.Out, format, args...) }

// expect records and prints an expectation.
func (s *Story) expect(ok bool, format string, args ...any) bool {
	if ok {
		s.printf("      ok    "+format+"\n", args...)
	} else {
		msg := fmt.Sprintf(format, args...)
		s.failures = append(s.failures, msg)
		s.printf("      FAIL  %s\n", msg)
	}
	return ok
}

// step is one step of a story.
type step struct {
	name string
	run  func(context.Context) error
}

// steps runs each step, an error being one failed expectation.
func (s *Story) steps(ctx context.Context, steps []step) {
	for _, st := range steps {
		s.printf("\n%s\n", st.name)
		if err := st.run(ctx); err != nil {
			s.expect(false, "%v", err)
		}
	}
}

// Run tells both stories and returns an error listing every expectation
// that did not hold.
func (s *Story) Run(ctx context.Context) error {
	if err := s.RunRefund(ctx); err != nil {
		return err
	}
	return s.RunSupportdesk(ctx)
}

func (s *Story) result() error {
	if len(s.failures) > 0 {
		return fmt.Errorf("%d expectations failed: %s", len(s.failures), strings.Join(s.failures, "; "))
	}
	return nil
}

func (s *Story) example(name string) (*devstack.Example, error) {
	e, ok := s.Stack.Example(name)
	if !ok {
		return nil, fmt.Errorf("the stack does not run the %s example", name)
	}
	return e, nil
}

// bind binds tasks to an example's contract, each on its record.
func (s *Story) bind(ctx context.Context, e *devstack.Example, tasks [][2]string) error {
	for _, t := range tasks {
		item, err := Bind(ctx, s.Gov, e, t[0], t[1], s.Stack.Agents[0], time.Now())
		if err != nil {
			return err
		}
		s.printf("bound %s to contract %s on %s (%s, %.12s)\n", t[0], item.GetItem().GetCanonItemId(), t[1],
			strings.TrimPrefix(item.GetClass().String(), "CANON_CLASS_"), item.GetItem().GetContentHash())
	}
	return nil
}

func (s *Story) read(ctx context.Context, task, purpose, source, key string, fields ...string) (*client.Evidence, error) {
	ev, err := s.Agent.Read(ctx, task, purpose, source, key, fields...)
	if err == nil {
		q := ""
		if len(ev.Receipt.GetQuarantined()) > 0 {
			q = fmt.Sprintf(", quarantined %v", ev.Receipt.GetQuarantined())
		}
		s.printf("      read  %s/%s %v → receipt %s (%s, %s%s)\n", source, key, fields, ev.Receipt.GetReceiptId(),
			ev.Receipt.GetStateVersion(), strings.TrimPrefix(ev.Receipt.GetProvenance().String(), "PROVENANCE_"), q)
	}
	return ev, err
}

// refused prints a refusal and says whether it carries the reason.
func (s *Story) refused(what string, err error, reason string) bool {
	st := status.Convert(err)
	s.printf("      %s → %v %s: %s\n", what, st.Code(), client.Reason(err), st.Message())
	return err != nil && client.Reason(err).String() == "ERROR_REASON_"+reason
}

func (s *Story) propose(ctx context.Context, p client.Proposal) (*client.Decision, error) {
	d, err := s.Agent.Propose(ctx, p)
	if err == nil {
		s.printf("      propose %s %s → %s [%s] decision %s\n", p.Tool, args(p.Args), outcome(d), strings.Join(d.Codes(), ", "), d.GetDecisionId())
	}
	return d, err
}

func args(a any) string {
	s := fmt.Sprintf("%v", a)
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

func outcome(d *client.Decision) string {
	return strings.TrimPrefix(d.GetDecision().GetOutcome().String(), "OUTCOME_")
}

func has(d *client.Decision, code string) bool {
	for _, c := range d.Codes() {
		if c == code {
			return true
		}
	}
	return false
}

// executeAndVerify runs an allowed call's effect and its readback.
func (s *Story) executeAndVerify(ctx context.Context, d *client.Decision) (*client.Outcome, error) {
	eff, err := s.Agent.Execute(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("execute: %w", err)
	}
	s.printf("      execute capability → effect receipt %s, record %s\n", eff.GetReceipt().GetReceiptId(), eff.GetReceipt().GetRecordRef())
	rb, err := s.Agent.Verify(ctx, d, eff)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	s.printf("      readback → %s receipt %s %v\n", strings.TrimPrefix(rb.GetReceipt().GetStatus().String(), "READBACK_STATUS_"),
		rb.GetReceipt().GetReceiptId(), rb.GetReceipt().GetFindings())
	s.expect(rb.GetReceipt().GetStatus() == receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED, "the verifier read the effect back: VERIFIED")
	return &client.Outcome{Decision: d, Effect: eff, Readback: rb}, nil
}

// allowThenRun expects an ALLOW and runs the effect and its readback.
func (s *Story) allowThenRun(ctx context.Context, d *client.Decision) (*client.Outcome, error) {
	if !s.expect(d.Allowed(), "ALLOW with a one-time capability") {
		return nil, nil
	}
	return s.executeAndVerify(ctx, d)
}

// approve approves with ambitctl as the governance identity.
func (s *Story) approve(ctx context.Context, id, note string) error {
	cmd := exec.CommandContext(ctx, s.Ambitctl, "approve", "--kernel", s.Stack.Kernel.Governance, "--pki", s.Stack.PKI,
		"--as", devstack.Governance, "--note", note, id)
	out, err := cmd.CombinedOutput()
	s.printf("      $ ambitctl approve %s\n        %s", id, out)
	if err != nil {
		return fmt.Errorf("ambitctl approve: %w", err)
	}
	return nil
}

// reviewThenApprove expects a REVIEW with a pending approval and gives it.
func (s *Story) reviewThenApprove(ctx context.Context, d *client.Decision, code, note string) (string, error) {
	if !s.expect(d.Review() && has(d, code) && d.GetApprovalId() != "", "REVIEW (%s) with pending approval %s", code, d.GetApprovalId()) {
		return "", errors.New("no approval to give")
	}
	return d.GetApprovalId(), s.approve(ctx, d.GetApprovalId(), note)
}

// commitment is the task's latest commitment in the agent's self-view.
func (s *Story) commitment(ctx context.Context, task string) (*agentv1.Commitment, error) {
	v, err := s.Agent.SelfView(ctx, task, "commitments")
	if err != nil {
		return nil, err
	}
	if len(v.GetCommitments()) == 0 {
		return nil, errors.New("no commitment")
	}
	return v.GetCommitments()[len(v.GetCommitments())-1], nil
}

// awaitCommitment polls the agent's self-view until the task's latest
// commitment has the status, for at most bound.
func (s *Story) awaitCommitment(ctx context.Context, task string, want agentv1.CommitmentStatus, bound time.Duration) (*agentv1.Commitment, error) {
	deadline := time.Now().Add(bound)
	for {
		c, err := s.commitment(ctx, task)
		if err != nil || c.GetStatus() == want || time.Now().After(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
