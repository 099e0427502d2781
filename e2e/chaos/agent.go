package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/examples/demo"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/client"
)

// The steps of a loop, as the figures count their retries.
const (
	StepBind    = "bind"
	StepRead    = "read"
	StepPropose = "propose"
	StepExecute = "execute"
	StepVerify  = "verify"
)

// Steps are the steps in loop order.
var Steps = []string{StepBind, StepRead, StepPropose, StepExecute, StepVerify}

// maxProposals bounds the proposals of one loop: a capability that
// expired unredeemed is proposed afresh, as an agent would.
const maxProposals = 10

// loop is one task: one effect of one tool on one record.
type loop struct {
	example string
	task    string
	// record is the claim or the ticket the task is bound to.
	record string
	// minor is the refund's or the credit's amount in GBP minor units.
	minor int64
}

// tool is the loop's tool.
func (l loop) tool() string {
	if l.example == demo.Supportdesk {
		return "issue_credit"
	}
	return "refund"
}

// do runs one loop to its end, retrying every step as an agent would, and
// records its outcome.
func (r *run) do(ctx context.Context, agent *client.Agent, agentName string, l loop) {
	ctx, cancel := context.WithTimeout(ctx, r.o.LoopTimeout)
	defer cancel()
	out := Outcome{Task: l.task, Example: l.example, Tool: l.tool(), Record: l.record, Minor: l.minor}
	out.Err = r.steps(ctx, agent, agentName, l, &out)
	r.progress(r.fig.loopDone(out))
}

func (r *run) steps(ctx context.Context, agent *client.Agent, agentName string, l loop, out *Outcome) error {
	if err := r.bind(ctx, l, agentName); err != nil {
		return fmt.Errorf("%s: %w", StepBind, err)
	}
	var eff *actionv1.ExecuteResponse
	var d *client.Decision
	for round := 1; eff == nil; round++ {
		if round > maxProposals {
			return fmt.Errorf("%s: %d capabilities expired before they were used", StepExecute, maxProposals)
		}
		ev, err := r.read(ctx, agent, l)
		if err != nil {
			return fmt.Errorf("%s: %w", StepRead, err)
		}
		// The same request id on every retry: a decision whose answer
		// was lost is answered again, not decided again.
		p := client.Proposal{Task: l.task, Tool: l.tool(), Evidence: []*client.Evidence{ev},
			RequestID: fmt.Sprintf("%s-proposal-%d", l.task, round)}
		switch l.example {
		case demo.Supportdesk:
			p.Purpose, p.Args = demo.DeskPurpose, demo.Credit(l.record, demo.Customer, l.minor)
		default:
			p.Purpose, p.Args = demo.RefundPurpose, demo.Refund(l.record, l.minor, demo.Claimant)
		}
		err = r.retry(ctx, StepPropose, func(ctx context.Context) error {
			d, err = agent.Propose(ctx, p)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", StepPropose, err)
		}
		if !d.Allowed() {
			return fmt.Errorf("%s: %s %v, want ALLOW", StepPropose, d.GetDecision().GetOutcome(), d.Codes())
		}
		out.Key = d.GetIdempotencyKey()
		// The same capability and idempotency key on every retry: the
		// effect happens at most once whatever was lost.
		err = r.retry(ctx, StepExecute, func(ctx context.Context) error {
			eff, err = agent.Execute(ctx, d)
			return err
		})
		if client.Reason(err) == errorv1.ErrorReason_ERROR_REASON_CAPABILITY_EXPIRED {
			// Never redeemed, so never executed: propose again.
			r.fig.reproposed()
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", StepExecute, err)
		}
	}
	out.EffectID = eff.GetReceipt().GetReceiptId()
	var rb *receiptv1.ReadbackReceipt
	err := r.retry(ctx, StepVerify, func(ctx context.Context) error {
		resp, err := agent.Verify(ctx, d, eff)
		rb = resp.GetReceipt()
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", StepVerify, err)
	}
	if rb.GetStatus() != receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED {
		return fmt.Errorf("%s: readback %s %v", StepVerify, rb.GetStatus(), rb.GetFindings())
	}
	return nil
}

// read reads the loop's record, as its contract grants.
func (r *run) read(ctx context.Context, agent *client.Agent, l loop) (*client.Evidence, error) {
	var ev *client.Evidence
	err := r.retry(ctx, StepRead, func(ctx context.Context) error {
		var err error
		switch l.example {
		case demo.Supportdesk:
			ev, err = agent.Read(ctx, l.task, demo.DeskPurpose, "tickets", l.record, demo.TicketFields...)
		default:
			ev, err = agent.Read(ctx, l.task, demo.RefundPurpose, "claims_db", l.record, demo.ClaimFields...)
		}
		return err
	})
	return ev, err
}

// bind proposes the example's contract for the task, promotes it and
// binds the task to the agent, as governance would. Each step is
// idempotent: a repeated proposal of the same item, a repeated promotion
// and a repeated binding change nothing.
func (r *run) bind(ctx context.Context, l loop, agentName string) error {
	e, ok := r.st.Example(l.example)
	if !ok {
		return fmt.Errorf("the stack does not run %s", l.example)
	}
	// Made once, so that every retry proposes the very same item.
	c, err := demo.Contract(e, l.task, l.record, time.Now())
	if err != nil {
		return err
	}
	id := "ctr-" + l.task
	item := demo.ContractItem(id, demo.ProvenanceRef(e, c), c)
	calls := []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := r.gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: item})
			if status.Code(err) == codes.AlreadyExists {
				// The first attempt was recorded and its answer lost.
				return nil
			}
			return err
		},
		func(ctx context.Context) error {
			_, err := r.gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: id})
			return err
		},
		func(ctx context.Context) error {
			_, err := r.gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: l.task, ContractItemId: id, Agent: agentName})
			return err
		},
	}
	for _, call := range calls {
		if err := r.retry(ctx, StepBind, call); err != nil {
			return err
		}
	}
	return nil
}

// retry calls fn until it succeeds, as an agent retries a call whose
// answer it did not get: the same request again, after a pause that grows
// to a second. Only what a crash or a restart looks like from outside — no
// answer (Unavailable, DeadlineExceeded), or an answer saying a
// dependency is down (Unavailable) — is retried; any other answer is
// final.
func (r *run) retry(ctx context.Context, step string, fn func(context.Context) error) error {
	pause := 25 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, r.o.CallTimeout)
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("gave up: %w", err)
		}
		r.fig.retried(step)
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up: %w", err)
		case <-time.After(pause/2 + rand.N(pause)):
		}
		pause = min(2*pause, time.Second)
	}
}

func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	case codes.Canceled:
		// A connection torn down under the call; the loop's own end is
		// checked by the caller.
		return true
	}
	return false
}

// Outcome is one loop's end.
type Outcome struct {
	Task, Example, Tool, Record string
	Minor                       int64
	// Key is the idempotency key of the capability executed; EffectID its
	// effect receipt's id, as the agent received it.
	Key, EffectID string
	// Err is why the loop did not finish; nil when it was read back
	// VERIFIED.
	Err error
}

func (o Outcome) String() string {
	s := fmt.Sprintf("%s (%s %s on %s)", o.Task, o.Tool, money(o.Minor), o.Record)
	if o.Err != nil {
		s += ": " + strings.TrimSpace(o.Err.Error())
	}
	return s
}

func money(minor int64) string { return fmt.Sprintf("GBP %d.%02d", minor/100, minor%100) }
