package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
)

func runEval(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "eval")
	contractFile := fs.String("contract", "", "contract file (YAML or JSON)")
	proposalFile := fs.String("proposal", "", "proposal file: self-declared facts (YAML or JSON)")
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
	pf, err := contract.LoadFacts(*proposalFile)
	if err != nil {
		return err
	}
	facts := contract.Facts(pf)
	var d evaluate.Decision
	if err := evaluate.Evaluate(&facts, compiled, now, &d); err != nil {
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
