package cli

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/derive"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// runEval evaluates in a goroutine of its own so that an interrupt
// (SIGINT, SIGTERM: ctx ends) returns at once, whatever step it is in;
// the evaluation itself has no side effect to wait for.
func runEval(ctx context.Context, env *Env, args []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- evalOnce(&Env{Stdout: &out, Stderr: env.Stderr}, args) }()
	select {
	case err := <-done:
		if _, werr := env.Stdout.Write(out.Bytes()); err == nil {
			err = werr
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("eval: %w", ctx.Err())
	}
}

func evalOnce(env *Env, args []string) error {
	fs := newFlags(env, "eval")
	contractFile := fs.String("contract", "", "contract file (YAML or JSON)")
	proposalFile := fs.String("proposal", "", "proposal file: self-declared facts, optionally a tool call and the record's values (YAML or JSON)")
	nowFlag := fs.String("now", "", "evaluation instant, RFC 3339 (default: the current time)")
	format := fs.String("format", "text", "output format: text or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if *contractFile == "" || *proposalFile == "" {
		return fmt.Errorf("%w: eval needs --contract FILE and --proposal FILE", ErrUsage)
	}
	now := time.Now().UTC()
	if *nowFlag != "" {
		t, err := time.Parse(time.RFC3339, *nowFlag)
		if err != nil {
			return fmt.Errorf("%w: --now: %w", ErrUsage, err)
		}
		now = t
	}
	c, err := contract.Load(*contractFile)
	if err != nil {
		return err
	}
	compiled, err := contract.Compile(c)
	if err != nil {
		return err
	}
	p, err := contract.LoadProposal(*proposalFile)
	if err != nil {
		return err
	}
	facts := contract.Facts(p.Facts)
	if p.Call != nil {
		if err := deriveCall(&facts, compiled, p); err != nil {
			return fmt.Errorf("evaluate %s: %w", *proposalFile, err)
		}
	}
	var d evaluate.Decision
	if err := evaluate.Evaluate(&facts, compiled.Eval, now, &d); err != nil {
		return fmt.Errorf("evaluate %s: %w", *proposalFile, err)
	}
	if *format == "json" {
		out, err := protoJSON(contract.DecisionProto(&d))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(env.Stdout, string(out))
		return err
	}
	fmt.Fprintf(env.Stdout, "%s\n", d.Outcome)
	for _, r := range d.Reasons {
		fmt.Fprintf(env.Stdout, "  %-8s %-32s %s\n", r.Aperture, r.Code, r.Detail())
	}
	return nil
}

// deriveCall derives what a tool call's declarations decide — the tool,
// amount, destination, irreversibility and failed constraints — as the
// kernel would, over the record values the proposal states.
func deriveCall(f *evaluate.Facts, c *contract.Compiled, p *contract.Proposal) error {
	call, err := toolcall.Parse(p.Call.GetTool(), p.Call.GetArgumentsJson())
	if err != nil {
		return err
	}
	plan, err := derive.PlanCall(c, call)
	if err != nil {
		return err
	}
	f.Tool, f.Amount, f.Destination = call.Tool, plan.Amount, ""
	if f.Record == "" {
		f.Record = plan.Record
	}
	b := c.Proto.GetBinding()
	derive.Call(f, plan, call, p.Record, derive.Task{Subject: b.GetSubject(), Purpose: b.GetPurpose()},
		derive.Usage{Count: max(f.ActionCount-1, 0), Minor: f.PriorAmount.Minor})
	return nil
}
