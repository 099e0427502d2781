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
	"github.com/spf13/cobra"
)

// evalOptions are eval's flags.
type evalOptions struct {
	contract, proposal, now, format string
}

func evalCmd(env *Env) *cobra.Command {
	cmd := leaf("eval --contract FILE --proposal FILE", "evaluate one proposal file under one contract file")
	var o evalOptions
	f := cmd.Flags()
	f.StringVar(&o.contract, "contract", "", "contract file (YAML or JSON)")
	f.StringVar(&o.proposal, "proposal", "", "proposal file: self-declared facts, optionally a tool call and the record's values (YAML or JSON)")
	f.StringVar(&o.now, "now", "", "evaluation instant, RFC 3339 (default: the current time)")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	formats(cmd, "text", "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runEval(cmd.Context(), env, &o, args) }
	return cmd
}

// runEval evaluates in a goroutine of its own so that an interrupt
// (SIGINT, SIGTERM: ctx ends) returns at once, whatever step it is in;
// the evaluation itself has no side effect to wait for.
func runEval(ctx context.Context, env *Env, o *evalOptions, args []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- evalOnce(&Env{Stdout: &out, Stderr: env.Stderr}, o, args) }()
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

func evalOnce(env *Env, o *evalOptions, args []string) error {
	if err := checkFormat(o.format); err != nil {
		return err
	}
	if len(args) > 0 {
		return fmt.Errorf("%w: eval takes no arguments, got %q", ErrUsage, args)
	}
	if o.contract == "" || o.proposal == "" {
		return fmt.Errorf("%w: eval needs --contract FILE and --proposal FILE", ErrUsage)
	}
	now := time.Now().UTC()
	if o.now != "" {
		t, err := time.Parse(time.RFC3339, o.now)
		if err != nil {
			return fmt.Errorf("%w: --now: %w", ErrUsage, err)
		}
		now = t
	}
	c, err := contract.Load(o.contract)
	if err != nil {
		return err
	}
	compiled, err := contract.Compile(c)
	if err != nil {
		return err
	}
	p, err := contract.LoadProposal(o.proposal)
	if err != nil {
		return err
	}
	facts := contract.Facts(p.Facts)
	if p.Call != nil {
		if err := deriveCall(&facts, compiled, p); err != nil {
			return fmt.Errorf("evaluate %s: %w", o.proposal, err)
		}
	}
	var d evaluate.Decision
	if err := evaluate.Evaluate(&facts, compiled.Eval, now, &d); err != nil {
		return fmt.Errorf("evaluate %s: %w", o.proposal, err)
	}
	if o.format == "json" {
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
