package contract_test

import (
	"errors"
	"testing"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/suite"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
)

// FuzzLoadAndEvaluate feeds arbitrary contract and proposal bytes through
// loading, validation, compilation and evaluation. Whatever the input, it
// must either be refused with an error or decided with at least one reason;
// it must never panic, and evaluating twice must agree.
func FuzzLoadAndEvaluate(f *testing.F) {
	var episodes []suite.Episode
	for _, name := range []string{suite.Seed, suite.Extended} {
		eps, err := suite.Load(name)
		if err != nil {
			f.Fatal(err)
		}
		episodes = append(episodes, eps...)
	}
	for _, p := range contract.ProfileNames() {
		data, err := contract.ProfileFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// One episode per family keeps the seed corpus small but complete.
		seen := map[string]bool{}
		for _, ep := range episodes {
			if !seen[ep.Family] {
				seen[ep.Family] = true
				f.Add(data, []byte(ep.Facts))
			}
		}
	}
	f.Fuzz(func(t *testing.T, contractData, factsData []byte) {
		c, err := contract.Parse("fuzz.yaml", contractData)
		if err != nil {
			return
		}
		compiled, err := contract.Compile(c)
		if err != nil {
			t.Fatalf("Parse accepted a contract Compile refuses: %v", err)
		}
		pf := &contractv1.Facts{}
		if err := contract.Decode(factsData, pf); err != nil {
			return
		}
		if err := contract.ValidateFacts(pf); err != nil {
			return
		}
		facts := contract.Facts(pf)
		var d1, d2 evaluate.Decision
		err1 := evaluate.Evaluate(&facts, compiled.Eval, suite.Now, &d1)
		err2 := evaluate.Evaluate(&facts, compiled.Eval, suite.Now, &d2)
		if err1 != nil {
			if !errors.Is(err1, evaluate.ErrInvalidFacts) || err2 == nil {
				t.Fatalf("inconsistent errors: %v / %v", err1, err2)
			}
			return
		}
		if d1.Outcome == 0 || len(d1.Reasons) == 0 {
			t.Fatalf("decision without outcome or reason")
		}
		if d1.Outcome != d2.Outcome || len(d1.Reasons) != len(d2.Reasons) {
			t.Fatalf("not deterministic")
		}
		_ = contract.DecisionProto(&d1)
	})
}
