package evaluate_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

var (
	fieldNames  = []string{"claim_id", "claimant_id", "receipt_total", "receipt_date", "cost_centre", "medical_notes", "salary", "bank_account"}
	sourceNames = []string{"claims_db", "receipt_upload", "email", "web"}
	actionNames = []string{"refund", "email_attachment", "change_policy"}
	destNames   = []string{"claimant", "other_customer", "external"}
	selfNames   = []string{"capabilities", "uncertainty", "commitments", "expiry", "policy_thresholds", "credentials", "contract"}
	subjects    = []string{"*", "employee-7", "employee-9"}
	versions    = []string{"*", "claims-v41", "claims-v42", "claims-v43"}
)

func subset(t *rapid.T, label string, universe []string) []string {
	return rapid.SliceOfNDistinct(rapid.SampledFrom(universe), 0, len(universe), rapid.ID[string]).Draw(t, label)
}

// low is the smallest number drawn for amounts, counts and ages: below zero
// only when invalid input is wanted.
func low(valid bool) int64 {
	if valid {
		return 0
	}
	return -2
}

func genContract(t *rapid.T) *evaluate.Contract {
	c := &evaluate.Contract{
		Subject:       rapid.SampledFrom(subjects).Draw(t, "subject"),
		Purpose:       rapid.SampledFrom([]string{"*", "expense-refund", "marketing"}).Draw(t, "purpose"),
		StateVersion:  rapid.SampledFrom(versions).Draw(t, "state"),
		ValidUntil:    now.Add(time.Duration(rapid.IntRange(-3, 3).Draw(t, "valid")) * time.Hour),
		Fields:        subset(t, "fields", fieldNames),
		MaxAgeSeconds: rapid.Int64Range(0, 200_000).Draw(t, "max_age"),
		Tools:         genTools(t),
		MaxAmount:     evaluate.Money{Currency: "GBP", Minor: rapid.Int64Range(0, 20_000).Draw(t, "max")},
		MaxActions:    rapid.Int32Range(0, 3).Draw(t, "max_actions"),
		VisibleFacts:  subset(t, "visible", selfNames),
		MutableFacts:  subset(t, "mutable", selfNames),
		Coupling: evaluate.Coupling{
			RequireTrustedCorroboration:  rapid.Bool().Draw(t, "rule1"),
			IrreversibleMaxAgeSeconds:    rapid.Int64Range(0, 2_000).Draw(t, "rule2_age"),
			IrreversibleRequiresApproval: rapid.Bool().Draw(t, "rule2_approval"),
			RevokeOnStateChange:          rapid.Bool().Draw(t, "rule3"),
			ForbidSelfMutation:           rapid.Bool().Draw(t, "rule4"),
		},
		AllowIrreversible: rapid.Bool().Draw(t, "irreversible"),
	}
	c.ApprovalOver = evaluate.Money{Currency: "GBP", Minor: rapid.Int64Range(0, c.MaxAmount.Minor).Draw(t, "approval")}
	if rapid.Bool().Draw(t, "has_cumulative") {
		c.MaxCumulative = evaluate.Money{Currency: "GBP", Minor: rapid.Int64Range(0, 40_000).Draw(t, "cumulative")}
	}
	for _, s := range subset(t, "sources", sourceNames) {
		c.Sources = append(c.Sources, evaluate.Source{Name: s, Provenance: evaluate.Provenance(rapid.IntRange(1, 3).Draw(t, "prov_"+s))})
	}
	return c
}

func genTools(t *rapid.T) []evaluate.Tool {
	var out []evaluate.Tool
	for _, name := range subset(t, "tools", actionNames) {
		out = append(out, evaluate.Tool{Name: name, Destinations: subset(t, "dests_"+name, destNames)})
	}
	return out
}

func genFacts(t *rapid.T, valid bool) *evaluate.Facts {
	f := &evaluate.Facts{
		Subject:         rapid.SampledFrom(subjects[1:]).Draw(t, "f_subject"),
		Purpose:         rapid.SampledFrom([]string{"expense-refund", "marketing"}).Draw(t, "f_purpose"),
		StateVersion:    rapid.SampledFrom(versions[1:]).Draw(t, "f_state"),
		Tool:            rapid.SampledFrom(actionNames).Draw(t, "f_action"),
		Destination:     rapid.SampledFrom(destNames).Draw(t, "f_dest"),
		ActionCount:     rapid.Int32Range(int32(low(valid)), 3).Draw(t, "f_count"),
		Irreversible:    rapid.Bool().Draw(t, "f_irreversible"),
		ApprovalPresent: rapid.Bool().Draw(t, "f_approval"),
		SelfQueries:     subset(t, "f_queries", selfNames),
		SelfMutations:   subset(t, "f_mutations", selfNames[:3]),
	}
	if rapid.Bool().Draw(t, "f_has_current") {
		f.CurrentStateVersion = rapid.SampledFrom(versions[1:]).Draw(t, "f_current")
	}
	if rapid.Bool().Draw(t, "f_has_amount") {
		f.Amount = evaluate.Money{
			Currency: rapid.SampledFrom([]string{"GBP", "GBP", "GBP", "EUR"}).Draw(t, "f_currency"),
			Minor:    rapid.Int64Range(low(valid)+1, 20_000).Draw(t, "f_amount"),
		}
		if rapid.Bool().Draw(t, "f_has_prior") {
			f.PriorAmount = evaluate.Money{Currency: f.Amount.Currency, Minor: rapid.Int64Range(low(valid), 20_000).Draw(t, "f_prior")}
		}
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "f_evidence") {
		_ = i
		f.Evidence = append(f.Evidence, evaluate.Evidence{
			Source:     rapid.SampledFrom(sourceNames).Draw(t, "e_source"),
			Fields:     subset(t, "e_fields", fieldNames),
			AgeSeconds: rapid.Int64Range(low(valid), 200_000).Draw(t, "e_age"),
			Provenance: evaluate.Provenance(rapid.IntRange(0, 3+int(-low(valid))).Draw(t, "e_prov")),
		})
	}
	return f
}

func cloneContract(c *evaluate.Contract) *evaluate.Contract {
	out := *c
	out.Fields = slices.Clone(c.Fields)
	out.Sources = slices.Clone(c.Sources)
	out.Tools = slices.Clone(c.Tools)
	for i := range out.Tools {
		out.Tools[i].Destinations = slices.Clone(c.Tools[i].Destinations)
	}
	out.VisibleFacts = slices.Clone(c.VisibleFacts)
	out.MutableFacts = slices.Clone(c.MutableFacts)
	return &out
}

func TestPropertyTotalAndDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, f := genContract(t), genFacts(t, rapid.Bool().Draw(t, "valid"))
		before := cloneContract(c)
		var d1, d2 evaluate.Decision
		err1 := evaluate.Evaluate(f, c, now, &d1)
		err2 := evaluate.Evaluate(f, c, now, &d2)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err1, err2)
		}
		if err1 != nil {
			if !errors.Is(err1, evaluate.ErrInvalidFacts) {
				t.Fatalf("error does not wrap ErrInvalidFacts: %v", err1)
			}
			return
		}
		if d1.Outcome == 0 || len(d1.Reasons) == 0 {
			t.Fatalf("no outcome or no reason: %v", d1.Reasons)
		}
		if diff := cmp.Diff(d1.Clone(), d2.Clone(), cmpopts.IgnoreUnexported(evaluate.Decision{})); diff != "" {
			t.Fatalf("not deterministic:\n%s", diff)
		}
		// Rule 4 in its widest form: evaluation never changes the contract.
		if diff := cmp.Diff(before, c); diff != "" {
			t.Fatalf("evaluation changed the contract:\n%s", diff)
		}
	})
}

// removals lists every way to take one relation out of a contract.
func removals(c *evaluate.Contract) []func(*evaluate.Contract) {
	var out []func(*evaluate.Contract)
	drop := func(get func(*evaluate.Contract) *[]string) {
		for i := range *get(c) {
			out = append(out, func(c *evaluate.Contract) { p := get(c); *p = slices.Delete(*p, i, i+1) })
		}
	}
	drop(func(c *evaluate.Contract) *[]string { return &c.Fields })
	for i, tool := range c.Tools {
		out = append(out, func(c *evaluate.Contract) { c.Tools = slices.Delete(c.Tools, i, i+1) })
		for j := range tool.Destinations {
			out = append(out, func(c *evaluate.Contract) {
				c.Tools[i].Destinations = slices.Delete(c.Tools[i].Destinations, j, j+1)
			})
		}
	}
	drop(func(c *evaluate.Contract) *[]string { return &c.VisibleFacts })
	drop(func(c *evaluate.Contract) *[]string { return &c.MutableFacts })
	for i := range c.Sources {
		out = append(out, func(c *evaluate.Contract) { c.Sources = slices.Delete(c.Sources, i, i+1) })
	}
	return out
}

func severity(o evaluate.Outcome) int {
	return map[evaluate.Outcome]int{evaluate.Allow: 0, evaluate.Review: 1, evaluate.Deny: 2}[o]
}

// genFactsNear draws valid facts that mostly sit inside c, so that removing
// one relation often decides between ALLOW and something stricter.
func genFactsNear(t *rapid.T, c *evaluate.Contract) *evaluate.Facts {
	f := genFacts(t, true)
	inside := func(label string) bool { return rapid.IntRange(0, 9).Draw(t, label) < 8 }
	pick := func(label string, grant []string, cur string) string {
		if len(grant) > 0 && inside(label+"_in") {
			return rapid.SampledFrom(grant).Draw(t, label)
		}
		return cur
	}
	if c.Subject != "*" && inside("n_subject") {
		f.Subject = c.Subject
	}
	if c.Purpose != "*" && inside("n_purpose") {
		f.Purpose = c.Purpose
	}
	if c.StateVersion != "*" && inside("n_state") {
		f.StateVersion = c.StateVersion
		f.CurrentStateVersion = ""
	}
	var tools []string
	for _, tool := range c.Tools {
		tools = append(tools, tool.Name)
	}
	f.Tool = pick("n_action", tools, f.Tool)
	for _, tool := range c.Tools {
		if tool.Name == f.Tool {
			f.Destination = pick("n_dest", tool.Destinations, f.Destination)
		}
	}
	if inside("n_count") {
		f.ActionCount = 1
	}
	if inside("n_amount") && c.MaxAmount.Minor > 0 {
		f.Amount = evaluate.Money{Currency: "GBP", Minor: rapid.Int64Range(1, c.MaxAmount.Minor).Draw(t, "n_minor")}
		f.PriorAmount = evaluate.Money{}
	}
	if inside("n_irreversible") {
		f.Irreversible = false
	}
	if inside("n_queries") {
		f.SelfQueries = rapid.SliceOfNDistinct(rapid.SampledFrom(append(c.VisibleFacts, "capabilities")), 0, 3, rapid.ID[string]).Draw(t, "n_q")
	}
	if inside("n_mutations") {
		f.SelfMutations = nil
	}
	for i := range f.Evidence {
		e := &f.Evidence[i]
		if len(c.Sources) > 0 && inside("n_src") {
			e.Source = c.Sources[rapid.IntRange(0, len(c.Sources)-1).Draw(t, "n_src_i")].Name
		}
		if inside("n_fields") {
			e.Fields = rapid.SliceOfNDistinct(rapid.SampledFrom(append(c.Fields, "claim_id")), 0, 3, rapid.ID[string]).Draw(t, "n_f")
		}
		if inside("n_age") {
			e.AgeSeconds = rapid.Int64Range(0, c.MaxAgeSeconds).Draw(t, "n_age")
		}
	}
	return f
}

func TestPropertyMonotone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genContract(t)
		c.ValidUntil = now.Add(time.Hour)
		f := genFactsNear(t, c)
		var d evaluate.Decision
		if err := evaluate.Evaluate(f, c, now, &d); err != nil {
			t.Fatalf("valid facts refused: %v", err)
		}
		base := d.Outcome
		for i, remove := range removals(c) {
			smaller := cloneContract(c)
			remove(smaller)
			if err := evaluate.Evaluate(f, smaller, now, &d); err != nil {
				t.Fatalf("removal %d: %v", i, err)
			}
			if severity(d.Outcome) < severity(base) {
				t.Fatalf("removal %d turned %v into %v (%v)", i, base, d.Outcome, d.Reasons)
			}
		}
	})
}
