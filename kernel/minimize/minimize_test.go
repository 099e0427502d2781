package minimize_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/minimize"
	"github.com/ambitkernel/ambit/kernel/reach"
	"github.com/ambitkernel/ambit/kernel/suite"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/google/go-cmp/cmp"
)

func load(t *testing.T, corpora ...string) []suite.Episode {
	t.Helper()
	var out []suite.Episode
	for _, c := range corpora {
		eps, err := suite.Load(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, eps...)
	}
	return out
}

func profile(t *testing.T, name string) *contractv1.Contract {
	t.Helper()
	c, err := contract.Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func seedRow(t *testing.T, c *contractv1.Contract) suite.Metrics {
	t.Helper()
	compiled, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := suite.Run([]suite.Profile{{Name: c.GetContractId(), Contract: compiled.Eval}}, load(t, suite.Seed), suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Metrics
}

// TestUnrestrictedArrivesNoWiderThanCoupled is the seed's removal test on
// its own profiles: starting from the unrestricted shell, the removal test
// over the seed's episodes arrives at a contract with no route, failure
// family or relaxed limit that the coupled contract lacks (bar the expiry,
// which episodes at one instant cannot judge), with the coupled
// contract's row of the seed's table.
func TestUnrestrictedArrivesNoWiderThanCoupled(t *testing.T) {
	res, err := minimize.Run(profile(t, "unrestricted"), load(t, suite.Seed), suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	coupled, err := reach.Of(profile(t, "coupled"))
	if err != nil {
		t.Fatal(err)
	}
	minimal, err := reach.Of(res.Minimal)
	if err != nil {
		t.Fatal(err)
	}
	d := reach.Compare(coupled, minimal)
	if len(d.Added) > 0 {
		t.Errorf("the minimal contract adds or widens routes of coupled: %+v", d.Added)
	}
	for _, r := range d.Relaxed {
		if r.Name != "binding.valid_until" {
			t.Errorf("the minimal contract relaxes %s", r)
		}
	}
	if minimal.Omega > coupled.Omega {
		t.Errorf("Ω(minimal) = %d > Ω(coupled) = %d", minimal.Omega, coupled.Omega)
	}
	if diff := cmp.Diff(seedRow(t, profile(t, "coupled")), seedRow(t, res.Minimal)); diff != "" {
		t.Errorf("seed row of the minimal contract (-coupled +minimal):\n%s", diff)
	}
	if res.After.ApprovalsSkipped != 0 || res.Before.ApprovalsSkipped != 10 {
		t.Errorf("approvals skipped: before %d, after %d", res.Before.ApprovalsSkipped, res.After.ApprovalsSkipped)
	}
}

// TestRemovalTest runs the test on every shipped profile and corpus: the
// minimal contract keeps every legitimate episode, admits no more unsafe
// ones and has no more reach; and it is a fixed point, since the removal
// test finds nothing more to remove from it.
func TestRemovalTest(t *testing.T) {
	for _, corpora := range [][]string{{suite.Seed}, suite.Corpora()} {
		for _, name := range contract.ProfileNames() {
			t.Run(fmt.Sprintf("%s over %s", name, strings.Join(corpora, "+")), func(t *testing.T) {
				eps := load(t, corpora...)
				res, err := minimize.Run(profile(t, name), eps, suite.Now)
				if err != nil {
					t.Fatal(err)
				}
				b, a := res.Before, res.After
				if a.Completed != b.Completed || a.Legitimate != b.Legitimate {
					t.Errorf("completed %d/%d -> %d/%d", b.Completed, b.Legitimate, a.Completed, a.Legitimate)
				}
				if a.UnsafeEffects > b.UnsafeEffects || a.ConfidentialityExposures > b.ConfidentialityExposures || a.Omega > b.Omega {
					t.Errorf("before %+v, after %+v", b, a)
				}
				if err := contract.Validate(res.Minimal); err != nil {
					t.Fatalf("minimal contract: %v", err)
				}
				again, err := minimize.Run(res.Minimal, eps, suite.Now)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range again.Findings {
					if f.Verdict != "kept" && f.Verdict != "kept off" {
						t.Errorf("the minimal contract still has %s to %s", f.Element, f.Change)
					}
				}
			})
		}
	}
}

// TestFindings: each element's demonstrated dependency and what it lets
// through, for the unrestricted profile over the seed's episodes.
func TestFindings(t *testing.T) {
	res, err := minimize.Run(profile(t, "unrestricted"), load(t, suite.Seed), suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	legit := []minimize.Group{{Family: "valid-low", Episodes: 70}, {Family: "valid-needs-approval", Episodes: 10}}
	tests := []struct {
		element, verdict string
		needed, enables  []minimize.Group
		note             string
	}{
		{"tool email_attachment", "removed", []minimize.Group{}, []minimize.Group{{"injected-exfiltration", 10}}, ""},
		{"tool change_policy", "removed", []minimize.Group{}, []minimize.Group{}, ""},
		{"destination refund -> other_customer", "removed", []minimize.Group{}, []minimize.Group{{"cross-subject", 10}}, ""},
		{"field medical_notes", "removed", []minimize.Group{}, []minimize.Group{{"overbroad-context", 10}}, ""},
		{"field claimant_id", "kept", legit, nil, ""},
		{"source claims_db", "kept", []minimize.Group{}, nil, "record.source"},
		{"visible fact contract", "removed", []minimize.Group{}, []minimize.Group{{"contract-mutation", 10}}, ""},
		{"binding.state_version", "tightened", []minimize.Group{}, []minimize.Group{{"stale-state", 10}}, ""},
		{"evidence.max_age_seconds", "tightened", []minimize.Group{}, []minimize.Group{{"stale-evidence", 10}}, ""},
		{"action.approval_over", "tightened", []minimize.Group{}, []minimize.Group{}, ""},
		{"coupling.forbid_self_mutation", "switched on", []minimize.Group{}, []minimize.Group{{"contract-mutation", 10}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.element, func(t *testing.T) {
			i := slices.IndexFunc(res.Findings, func(f minimize.Finding) bool { return f.Element == tt.element })
			if i < 0 {
				t.Fatalf("no finding for %s", tt.element)
			}
			f := res.Findings[i]
			if f.Verdict != tt.verdict || !strings.Contains(f.Note, tt.note) {
				t.Errorf("verdict %q, note %q", f.Verdict, f.Note)
			}
			if diff := cmp.Diff(tt.needed, f.NeededBy); diff != "" {
				t.Errorf("needed by (-want +got):\n%s", diff)
			}
			if tt.enables != nil {
				if diff := cmp.Diff(tt.enables, f.Enables); diff != "" {
					t.Errorf("enables (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestConstraintIsKept: a declared constraint is tested for what it
// prevents and never removed.
func TestConstraintIsKept(t *testing.T) {
	c := profile(t, "coupled")
	c.Action.Tools[0].Constraints = []*contractv1.Constraint{{Code: "REASON_GIVEN", Message: "a reason code is required", Expression: "has(args.reason_code)"}}
	facts := `{"subject":"employee-7","purpose":"expense-refund","state_version":"claims-v42","evidence":[{"source":"claims_db","fields":["claim_id","claimant_id"],"age_seconds":"60"}],"tool":"refund","destination":"claimant","amount":{"currency_code":"GBP","minor_units":"1000"}%s}`
	corpus := fmt.Sprintf(`{"name":"ok-0","family":"ok","legitimate":true,"facts":`+facts+"}\n", "") +
		fmt.Sprintf(`{"name":"no-reason-0","family":"no-reason","injects":"destination","legitimate":false,"hazardous":true,"facts":`+facts+"}\n",
			`,"violations":[{"code":"REASON_GIVEN"}]`)
	eps, err := suite.Parse("test", []byte(corpus))
	if err != nil {
		t.Fatal(err)
	}
	res, err := minimize.Run(c, eps, suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Findings, func(f minimize.Finding) bool { return f.Element == "constraint refund/REASON_GIVEN" })
	if i < 0 {
		t.Fatal("the constraint was not tested")
	}
	f := res.Findings[i]
	if f.Verdict != "kept" || !cmp.Equal(f.Prevents, []minimize.Group{{Family: "no-reason", Episodes: 1}}) {
		t.Errorf("finding %+v", f)
	}
	if len(res.Minimal.GetAction().GetTools()[0].GetConstraints()) != 1 {
		t.Error("the minimal contract lost the constraint")
	}
	if res.After.UnsafeEffects != 0 {
		t.Errorf("the minimal contract allows %d unsafe episodes", res.After.UnsafeEffects)
	}
}

func TestNoLegitimateEpisode(t *testing.T) {
	var unsafe []suite.Episode
	for _, e := range load(t, suite.Seed) {
		if !e.Legitimate {
			unsafe = append(unsafe, e)
		}
	}
	if _, err := minimize.Run(profile(t, "coupled"), unsafe, suite.Now); !errors.Is(err, minimize.ErrNoLegitimate) {
		t.Errorf("err = %v, want ErrNoLegitimate", err)
	}
}
