package evaluate_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/google/go-cmp/cmp"
)

var now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func gbp(minor int64) evaluate.Money { return evaluate.Money{Currency: "GBP", Minor: minor} }

// coupled is the seed's coupled profile with every coupling rule on.
func coupled() *evaluate.Contract {
	return &evaluate.Contract{
		Subject: "employee-7", Purpose: "expense-refund", StateVersion: "claims-v42",
		ValidUntil: now.Add(4 * time.Hour),
		Fields:     []string{"claim_id", "claimant_id", "receipt_total", "receipt_date", "cost_centre"},
		Sources: []evaluate.Source{
			{Name: "claims_db", Provenance: evaluate.Trusted},
			{Name: "receipt_upload", Provenance: evaluate.InstructionBearing},
		},
		MaxAgeSeconds: 86_400,
		Tools:         []evaluate.Tool{{Name: "refund", Destinations: []string{"claimant"}}},
		MaxAmount:     gbp(10_000),
		ApprovalOver:  gbp(5_000),
		MaxActions:    1,
		MaxCumulative: gbp(10_000),
		VisibleFacts:  []string{"capabilities", "uncertainty", "commitments", "expiry"},
		Coupling: evaluate.Coupling{
			RequireTrustedCorroboration:  true,
			IrreversibleMaxAgeSeconds:    900,
			IrreversibleRequiresApproval: true,
			RevokeOnStateChange:          true,
			ForbidSelfMutation:           true,
		},
	}
}

func facts() *evaluate.Facts {
	return &evaluate.Facts{
		Subject: "employee-7", Purpose: "expense-refund", StateVersion: "claims-v42",
		Evidence: []evaluate.Evidence{{
			Source:     "claims_db",
			Fields:     []string{"claim_id", "claimant_id", "receipt_total", "receipt_date", "cost_centre"},
			AgeSeconds: 600,
		}},
		Tool: "refund", Destination: "claimant", Amount: gbp(1740),
		SelfQueries: []string{"capabilities", "uncertainty"},
	}
}

type verdict struct {
	Outcome evaluate.Outcome
	Codes   []string
}

func decide(t *testing.T, f *evaluate.Facts, c *evaluate.Contract, at time.Time) verdict {
	t.Helper()
	var d evaluate.Decision
	if err := evaluate.Evaluate(f, c, at, &d); err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	v := verdict{Outcome: d.Outcome}
	for _, r := range d.Reasons {
		if r.Constraint != "" {
			v.Codes = append(v.Codes, r.Code.String()+":"+r.Constraint)
			continue
		}
		v.Codes = append(v.Codes, r.Code.String())
	}
	return v
}

func TestEvaluate(t *testing.T) {
	allow := verdict{evaluate.Allow, []string{"ALL_APERTURES_SATISFIED"}}
	tests := []struct {
		name     string
		facts    func(*evaluate.Facts)
		contract func(*evaluate.Contract)
		at       time.Time
		want     verdict
	}{
		{name: "baseline refund", want: allow},
		// Declared tools.
		{name: "a tool outside the grant", facts: func(f *evaluate.Facts) { f.Tool = "delete_claim" },
			want: verdict{evaluate.Deny, []string{"TOOL_OUTSIDE_GRANT"}}},
		{name: "a destination another tool grants", facts: func(f *evaluate.Facts) { f.Destination = "finance_team" },
			contract: func(c *evaluate.Contract) {
				c.Tools = append(c.Tools, evaluate.Tool{Name: "notify", Destinations: []string{"finance_team"}})
			},
			want: verdict{evaluate.Deny, []string{"DESTINATION_OUTSIDE_GRANT"}}},
		{name: "an unresolved destination", facts: func(f *evaluate.Facts) { f.Destination, f.DestinationUnresolved = "", true },
			want: verdict{evaluate.Review, []string{"DESTINATION_UNRESOLVED"}}},
		{name: "every failed constraint", facts: func(f *evaluate.Facts) {
			f.Violations = []evaluate.Violation{{Code: "REPLY_TOO_LONG", Message: "at most 2000 characters"}, {Code: "NO_LINKS"}}
		}, want: verdict{evaluate.Deny, []string{"CONSTRAINT_VIOLATED:REPLY_TOO_LONG", "CONSTRAINT_VIOLATED:NO_LINKS"}}},
		// Narrowed sources and quarantine.
		{name: "a field another source grants", facts: func(f *evaluate.Facts) { f.Evidence[0].Fields = []string{"receipt_text"} },
			contract: func(c *evaluate.Contract) {
				c.Sources[1].Fields = []string{"receipt_text", "total_within_limit"}
			},
			want: verdict{evaluate.Deny, []string{"FIELDS_OUTSIDE_GRANT"}}},
		{name: "a narrowed source's own field", facts: func(f *evaluate.Facts) {
			f.Evidence = append(f.Evidence, evaluate.Evidence{Source: "receipt_upload", Fields: []string{"receipt_text"}, AgeSeconds: 10, Quarantined: true})
		}, contract: func(c *evaluate.Contract) { c.Sources[1].Fields = []string{"receipt_text"} }, want: allow},
		{name: "quarantined text alone supports nothing", facts: func(f *evaluate.Facts) {
			f.Evidence = []evaluate.Evidence{{Source: "claims_db", Record: "claims_db/C-1001", Fields: []string{"claim_id"}, AgeSeconds: 10, Quarantined: true}}
		}, contract: func(c *evaluate.Contract) { c.Record = "claims_db/C-1001" },
			want: verdict{evaluate.Deny, []string{"RECORD_OUTSIDE_BINDING", "RECORD_EVIDENCE_MISSING", "UNCORROBORATED_EVIDENCE"}}},
		{name: "no state read is not a state change", facts: func(f *evaluate.Facts) { f.StateVersion = "" },
			want: verdict{evaluate.Review, []string{"NO_TRUSTED_EVIDENCE"}}},
		// Amount boundaries.
		{name: "at the approval threshold", facts: func(f *evaluate.Facts) { f.Amount = gbp(5_000) }, want: allow},
		{name: "one minor unit over the threshold", facts: func(f *evaluate.Facts) { f.Amount = gbp(5_001) },
			want: verdict{evaluate.Review, []string{"APPROVAL_REQUIRED"}}},
		{name: "over the threshold with approval", facts: func(f *evaluate.Facts) { f.Amount = gbp(5_001); f.ApprovalPresent = true }, want: allow},
		{name: "at the hard limit", facts: func(f *evaluate.Facts) { f.Amount = gbp(10_000) },
			want: verdict{evaluate.Review, []string{"APPROVAL_REQUIRED"}}},
		{name: "at the hard limit with approval", facts: func(f *evaluate.Facts) { f.Amount = gbp(10_000); f.ApprovalPresent = true }, want: allow},
		{name: "one minor unit over the hard limit", facts: func(f *evaluate.Facts) { f.Amount = gbp(10_001); f.ApprovalPresent = true },
			want: verdict{evaluate.Deny, []string{"AMOUNT_EXCEEDS_HARD_LIMIT", "CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}}},
		{name: "over the hard limit asks no approval", facts: func(f *evaluate.Facts) { f.Amount = gbp(20_000) },
			contract: func(c *evaluate.Contract) { c.MaxCumulative = evaluate.Money{} },
			want:     verdict{evaluate.Deny, []string{"AMOUNT_EXCEEDS_HARD_LIMIT"}}},
		{name: "other currency", facts: func(f *evaluate.Facts) { f.Amount = evaluate.Money{Currency: "EUR", Minor: 100} },
			want: verdict{evaluate.Deny, []string{"CURRENCY_OUTSIDE_GRANT"}}},
		// Evidence age boundaries.
		{name: "exactly at the maximum evidence age", facts: func(f *evaluate.Facts) { f.Evidence[0].AgeSeconds = 86_400 }, want: allow},
		{name: "one second over the maximum age", facts: func(f *evaluate.Facts) { f.Evidence[0].AgeSeconds = 86_401 },
			want: verdict{evaluate.Review, []string{"EVIDENCE_TOO_OLD"}}},
		// Expiry boundaries.
		{name: "at the expiry instant", at: now.Add(4 * time.Hour), want: allow},
		{name: "expired contract", at: now.Add(4*time.Hour + time.Nanosecond),
			want: verdict{evaluate.Review, []string{"CONTRACT_EXPIRED"}}},
		// Binding.
		{name: "subject mismatch", facts: func(f *evaluate.Facts) { f.Subject = "employee-9" },
			want: verdict{evaluate.Deny, []string{"SUBJECT_MISMATCH"}}},
		{name: "purpose mismatch", facts: func(f *evaluate.Facts) { f.Purpose = "marketing" },
			want: verdict{evaluate.Deny, []string{"PURPOSE_MISMATCH"}}},
		{name: "stale state", facts: func(f *evaluate.Facts) { f.StateVersion = "claims-v41" },
			want: verdict{evaluate.Review, []string{"STATE_VERSION_CHANGED"}}},
		{name: "wildcards match anything", facts: func(f *evaluate.Facts) { f.Subject, f.Purpose, f.StateVersion = "x", "y", "z" },
			contract: func(c *evaluate.Contract) { c.Subject, c.Purpose, c.StateVersion = "*", "*", "*" }, want: allow},
		// Deny reasons first, then review reasons, each in check order.
		{name: "every reason, deny first", facts: func(f *evaluate.Facts) {
			f.StateVersion = "claims-v41"
			f.Evidence[0].AgeSeconds = 172_800
			f.Destination = "external"
			f.SelfQueries = []string{"credentials"}
		}, at: now.Add(5 * time.Hour), want: verdict{evaluate.Deny, []string{
			"DESTINATION_OUTSIDE_GRANT", "SELF_FACTS_OUTSIDE_VIEW",
			"CONTRACT_EXPIRED", "STATE_VERSION_CHANGED", "EVIDENCE_TOO_OLD",
		}}},
		// E.
		{name: "field outside grant", facts: func(f *evaluate.Facts) { f.Evidence[0].Fields = append(f.Evidence[0].Fields, "salary") },
			want: verdict{evaluate.Deny, []string{"FIELDS_OUTSIDE_GRANT"}}},
		{name: "source outside grant", facts: func(f *evaluate.Facts) {
			f.Evidence = append(f.Evidence, evaluate.Evidence{Source: "web", Fields: []string{"claim_id"}})
		}, want: verdict{evaluate.Deny, []string{"SOURCE_OUTSIDE_GRANT"}}},
		// Rule 1: provenance.
		{name: "instruction-bearing evidence alone", facts: func(f *evaluate.Facts) { f.Evidence[0].Source = "receipt_upload" },
			want: verdict{evaluate.Review, []string{"UNCORROBORATED_EVIDENCE"}}},
		{name: "instruction-bearing evidence with approval", facts: func(f *evaluate.Facts) {
			f.Evidence[0].Source = "receipt_upload"
			f.ApprovalPresent = true
		}, want: allow},
		{name: "instruction-bearing evidence corroborated", facts: func(f *evaluate.Facts) {
			f.Evidence = append(f.Evidence, evaluate.Evidence{Source: "receipt_upload", Fields: []string{"receipt_total"}})
		}, want: allow},
		{name: "declared trust does not beat the contract's class", facts: func(f *evaluate.Facts) {
			f.Evidence[0].Source = "receipt_upload"
			f.Evidence[0].Provenance = evaluate.Trusted
		}, want: verdict{evaluate.Review, []string{"UNCORROBORATED_EVIDENCE"}}},
		{name: "untrusted read of a trusted source", facts: func(f *evaluate.Facts) { f.Evidence[0].Provenance = evaluate.Untrusted },
			want: verdict{evaluate.Review, []string{"UNCORROBORATED_EVIDENCE"}}},
		{name: "no evidence at all", facts: func(f *evaluate.Facts) { f.Evidence = nil },
			want: verdict{evaluate.Review, []string{"UNCORROBORATED_EVIDENCE"}}},
		{name: "rule 1 off", facts: func(f *evaluate.Facts) { f.Evidence[0].Source = "receipt_upload" },
			contract: func(c *evaluate.Contract) { c.Coupling.RequireTrustedCorroboration = false }, want: allow},
		// Cumulative effect.
		{name: "second action in the task", facts: func(f *evaluate.Facts) { f.ActionCount = 2; f.PriorAmount = gbp(1_000) },
			want: verdict{evaluate.Deny, []string{"ACTION_COUNT_EXCEEDS_GRANT"}}},
		{name: "cumulative exactly at the limit", facts: func(f *evaluate.Facts) { f.ActionCount = 2; f.PriorAmount = gbp(8_260) },
			contract: func(c *evaluate.Contract) { c.MaxActions = 5 }, want: allow},
		{name: "cumulative one minor unit over", facts: func(f *evaluate.Facts) { f.ActionCount = 2; f.PriorAmount = gbp(8_261) },
			contract: func(c *evaluate.Contract) { c.MaxActions = 5 },
			want:     verdict{evaluate.Deny, []string{"CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}}},
		{name: "prior already over the limit", facts: func(f *evaluate.Facts) { f.ActionCount = 2; f.PriorAmount = gbp(1 << 62) },
			contract: func(c *evaluate.Contract) { c.MaxActions = 5 },
			want:     verdict{evaluate.Deny, []string{"CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}}},
		// Rule 2: irreversibility.
		{name: "irreversible not permitted", facts: func(f *evaluate.Facts) { f.Irreversible = true; f.ApprovalPresent = true },
			want: verdict{evaluate.Deny, []string{"IRREVERSIBLE_NOT_PERMITTED"}}},
		{name: "irreversible without approval", facts: func(f *evaluate.Facts) { f.Irreversible = true; f.Evidence[0].AgeSeconds = 900 },
			contract: func(c *evaluate.Contract) { c.AllowIrreversible = true },
			want:     verdict{evaluate.Review, []string{"IRREVERSIBLE_APPROVAL_REQUIRED"}}},
		{name: "irreversible with evidence one second too old", facts: func(f *evaluate.Facts) {
			f.Irreversible = true
			f.ApprovalPresent = true
			f.Evidence[0].AgeSeconds = 901
		}, contract: func(c *evaluate.Contract) { c.AllowIrreversible = true },
			want: verdict{evaluate.Review, []string{"IRREVERSIBLE_EVIDENCE_TOO_OLD"}}},
		{name: "irreversible with fresh evidence and approval", facts: func(f *evaluate.Facts) {
			f.Irreversible = true
			f.ApprovalPresent = true
			f.Evidence[0].AgeSeconds = 900
		}, contract: func(c *evaluate.Contract) { c.AllowIrreversible = true }, want: allow},
		// Rule 3: state change after the read.
		{name: "record changed after the read", facts: func(f *evaluate.Facts) { f.CurrentStateVersion = "claims-v43" },
			want: verdict{evaluate.Review, []string{"STATE_VERSION_CHANGED"}}},
		{name: "record changed, unbound contract, rule 3 on", facts: func(f *evaluate.Facts) { f.CurrentStateVersion = "claims-v43" },
			contract: func(c *evaluate.Contract) { c.StateVersion = "*" },
			want:     verdict{evaluate.Review, []string{"STATE_VERSION_CHANGED"}}},
		{name: "record changed, unbound contract, rule 3 off", facts: func(f *evaluate.Facts) { f.CurrentStateVersion = "claims-v43" },
			contract: func(c *evaluate.Contract) { c.StateVersion = "*"; c.Coupling.RevokeOnStateChange = false }, want: allow},
		{name: "current version equal to the read", facts: func(f *evaluate.Facts) { f.CurrentStateVersion = "claims-v42" }, want: allow},
		// R and rule 4.
		{name: "hidden self-fact", facts: func(f *evaluate.Facts) { f.SelfQueries = []string{"policy_thresholds", "contract"} },
			want: verdict{evaluate.Deny, []string{"SELF_FACTS_OUTSIDE_VIEW"}}},
		{name: "mutation outside grant", facts: func(f *evaluate.Facts) { f.SelfMutations = []string{"contract"} },
			want: verdict{evaluate.Deny, []string{"SELF_MUTATIONS_OUTSIDE_GRANT"}}},
		{name: "granted mutation still forbidden by rule 4", facts: func(f *evaluate.Facts) { f.SelfMutations = []string{"expiry"} },
			contract: func(c *evaluate.Contract) { c.MutableFacts = []string{"expiry"} },
			want:     verdict{evaluate.Deny, []string{"SELF_MUTATION_FORBIDDEN"}}},
		{name: "granted mutation with rule 4 off", facts: func(f *evaluate.Facts) { f.SelfMutations = []string{"expiry"} },
			contract: func(c *evaluate.Contract) { c.MutableFacts = []string{"expiry"}; c.Coupling.ForbidSelfMutation = false }, want: allow},
		// Action without money.
		{name: "action without amount skips amount checks", facts: func(f *evaluate.Facts) { f.Amount = evaluate.Money{} }, want: allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := facts(), coupled()
			if tt.facts != nil {
				tt.facts(f)
			}
			if tt.contract != nil {
				tt.contract(c)
			}
			at := tt.at
			if at.IsZero() {
				at = now
			}
			if diff := cmp.Diff(tt.want, decide(t, f, c, at)); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluateInvalidInput(t *testing.T) {
	tests := []struct {
		name  string
		facts func(*evaluate.Facts)
	}{
		{"zero amount", func(f *evaluate.Facts) { f.Amount = gbp(0) }},
		{"negative amount", func(f *evaluate.Facts) { f.Amount = gbp(-1) }},
		{"amount without currency", func(f *evaluate.Facts) { f.Amount = evaluate.Money{Minor: 100} }},
		{"malformed currency", func(f *evaluate.Facts) { f.Amount = evaluate.Money{Currency: "gb1", Minor: 100} }},
		{"negative prior amount", func(f *evaluate.Facts) { f.PriorAmount = gbp(-5) }},
		{"prior amount in another currency", func(f *evaluate.Facts) { f.PriorAmount = evaluate.Money{Currency: "EUR", Minor: 5} }},
		{"negative action count", func(f *evaluate.Facts) { f.ActionCount = -1 }},
		{"negative evidence age", func(f *evaluate.Facts) { f.Evidence[0].AgeSeconds = -1 }},
		{"unknown provenance", func(f *evaluate.Facts) { f.Evidence[0].Provenance = 9 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := facts()
			tt.facts(f)
			var d evaluate.Decision
			err := evaluate.Evaluate(f, coupled(), now, &d)
			if !errors.Is(err, evaluate.ErrInvalidFacts) {
				t.Fatalf("err = %v, want ErrInvalidFacts", err)
			}
			if d.Outcome != 0 || len(d.Reasons) != 0 {
				t.Errorf("invalid input produced a decision: %v %v", d.Outcome, d.Reasons)
			}
		})
	}
}

func TestReasonDetail(t *testing.T) {
	f := facts()
	f.Evidence[0].Fields = append(f.Evidence[0].Fields, "salary", "medical_notes", "salary")
	f.SelfQueries = []string{"credentials", "contract"}
	var d evaluate.Decision
	if err := evaluate.Evaluate(f, coupled(), now, &d); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range d.Reasons {
		got = append(got, r.Aperture.String()+" "+r.Detail())
	}
	want := []string{
		"E fields outside grant: [medical_notes salary]",
		"R self facts outside view: [contract credentials]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	// A clone survives reuse of the decision.
	clone := d.Clone()
	_ = evaluate.Evaluate(facts(), coupled(), now, &d)
	if clone.Reasons[0].Detail() != "fields outside grant: [medical_notes salary]" {
		t.Errorf("clone was overwritten: %q", clone.Reasons[0].Detail())
	}
}

func TestApprovable(t *testing.T) {
	tests := []struct {
		name  string
		facts func(*evaluate.Facts)
		want  bool
	}{
		{"over threshold", func(f *evaluate.Facts) { f.Amount = gbp(7_400) }, true},
		{"uncorroborated", func(f *evaluate.Facts) { f.Evidence[0].Source = "receipt_upload" }, true},
		{"stale state", func(f *evaluate.Facts) { f.Amount = gbp(7_400); f.StateVersion = "claims-v41" }, false},
		{"allowed", func(*evaluate.Facts) {}, false},
		{"denied", func(f *evaluate.Facts) { f.Amount = gbp(70_000) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := facts()
			tt.facts(f)
			var d evaluate.Decision
			if err := evaluate.Evaluate(f, coupled(), now, &d); err != nil {
				t.Fatal(err)
			}
			if got := d.Approvable(); got != tt.want {
				t.Errorf("Approvable() = %v, want %v (%v)", got, tt.want, d.Reasons)
			}
		})
	}
}

// TestCodesAreTheWireEnum: every evaluator code is the ReasonCode of the
// same number and name, so the kernel maps one onto the other by number.
func TestCodesAreTheWireEnum(t *testing.T) {
	for c := evaluate.CodeContractExpired; c.String() != "UNSPECIFIED"; c++ {
		if got := contractv1.ReasonCode(c).String(); got != "REASON_CODE_"+c.String() {
			t.Errorf("code %d is %s here and %s on the wire", c, c, got)
		}
	}
	if n := len(contractv1.ReasonCode_name) - 1; n != int(evaluate.CodeNoTrustedEvidence) {
		t.Errorf("the wire declares %d codes, the evaluator %d", n, evaluate.CodeNoTrustedEvidence)
	}
}

// TestLongListsStayLinear evaluates lists far longer than the API allows:
// the evaluation must still finish promptly and report each item once.
func TestLongListsStayLinear(t *testing.T) {
	f := facts()
	for i := range 200_000 {
		f.SelfQueries = append(f.SelfQueries, fmt.Sprintf("fact-%d", i%50_000))
		f.Evidence[0].Fields = append(f.Evidence[0].Fields, fmt.Sprintf("field-%d", i%50_000))
	}
	var d evaluate.Decision
	if err := evaluate.Evaluate(f, coupled(), now, &d); err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Reasons {
		if len(r.Items) != 0 && len(r.Items) != 50_000 {
			t.Errorf("%s lists %d items, want 50000 distinct", r.Code, len(r.Items))
		}
	}
}

func TestCodesRoundTrip(t *testing.T) {
	for c := evaluate.CodeContractExpired; c.String() != "UNSPECIFIED"; c++ {
		got, ok := evaluate.ParseCode(c.String())
		if !ok || got != c {
			t.Errorf("ParseCode(%q) = %v, %v", c.String(), got, ok)
		}
	}
}
