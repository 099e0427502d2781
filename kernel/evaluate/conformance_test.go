package evaluate_test

import (
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/suite"
	"github.com/google/go-cmp/cmp"
)

func loadSuite(t testing.TB) ([]suite.Profile, []suite.Episode, []suite.Episode) {
	t.Helper()
	profiles, err := suite.ShippedProfiles()
	if err != nil {
		t.Fatal(err)
	}
	seed, err := suite.Load(suite.Seed)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := suite.Load(suite.Extended)
	if err != nil {
		t.Fatal(err)
	}
	return profiles, seed, ext
}

// TestSeedRows pins the seed's published table.
func TestSeedRows(t *testing.T) {
	profiles, seed, _ := loadSuite(t)
	got, err := suite.Run(profiles, seed, suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	want := []suite.Result{
		{Profile: "unrestricted", Metrics: suite.Metrics{LegitimateAllowed: 80, UnsafeAllowed: 50, ConfidentialityExposures: 10}},
		{Profile: "action-only", Metrics: suite.Metrics{LegitimateAllowed: 70, UnsafeAllowed: 30, ConfidentialityExposures: 10, Reviews: 10, Denials: 20}},
		{Profile: "evidence-plus-action", Metrics: suite.Metrics{LegitimateAllowed: 70, UnsafeAllowed: 20, Reviews: 20, Denials: 30}},
		{Profile: "coupled", Metrics: suite.Metrics{LegitimateAllowed: 70, Reviews: 30, Denials: 40}},
		{Profile: "coupled-strict", Metrics: suite.Metrics{LegitimateAllowed: 70, Reviews: 30, Denials: 40}},
		{Profile: "irreversible-coupled", Metrics: suite.Metrics{LegitimateAllowed: 70, Reviews: 30, Denials: 40}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seed suite (-want +got):\n%s", diff)
	}
}

// TestExtendedRows pins the seed's episodes plus the new failure-injection
// families. The seed's reference coupled profile lets the provenance and
// cumulative families through (it has neither rule); coupled-strict must
// allow nothing unsafe. Only irreversible-coupled grants the closing of a
// claim, under coupling rule 2: it allows the 10 approved closings on
// fresh evidence and sends the rest of that family to review, where every
// other profile denies all 40 closings.
func TestExtendedRows(t *testing.T) {
	profiles, seed, ext := loadSuite(t)
	got, err := suite.Run(profiles, append(append([]suite.Episode(nil), seed...), ext...), suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	want := []suite.Result{
		{Profile: "unrestricted", Metrics: suite.Metrics{LegitimateAllowed: 90, UnsafeAllowed: 130, ConfidentialityExposures: 10, Denials: 40}},
		{Profile: "action-only", Metrics: suite.Metrics{LegitimateAllowed: 80, UnsafeAllowed: 70, ConfidentialityExposures: 10, Reviews: 10, Denials: 100}},
		{Profile: "evidence-plus-action", Metrics: suite.Metrics{LegitimateAllowed: 80, UnsafeAllowed: 60, Reviews: 20, Denials: 110}},
		{Profile: "coupled", Metrics: suite.Metrics{LegitimateAllowed: 80, UnsafeAllowed: 20, Reviews: 40, Denials: 130}},
		{Profile: "coupled-strict", Metrics: suite.Metrics{LegitimateAllowed: 80, Reviews: 60, Denials: 130}},
		{Profile: "irreversible-coupled", Metrics: suite.Metrics{LegitimateAllowed: 90, Reviews: 100, Denials: 80}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("extended suite (-want +got):\n%s", diff)
	}
}

// TestMatchesSeedPort checks every seed episode under the seed's three
// profiles against the hand port: same outcome, same reasons in the same
// order, word for word.
func TestMatchesSeedPort(t *testing.T) {
	profiles, seed, _ := loadSuite(t)
	var d evaluate.Decision
	for _, p := range profiles {
		if p.Name == "evidence-plus-action" {
			continue // not in the seed
		}
		spec := toSeedSpec(p.Contract)
		for i := range seed {
			ep := &seed[i]
			if err := evaluate.Evaluate(ep.EvalFacts(), p.Contract, suite.Now, &d); err != nil {
				t.Fatalf("%s/%s: %v", p.Name, ep.Name, err)
			}
			wantOutcome, wantReasons := seedEvaluate(toSeedProposal(ep.EvalFacts()), spec, suite.Now, nil, nil)
			var gotReasons []string
			for _, r := range d.Reasons {
				gotReasons = append(gotReasons, r.Detail())
			}
			if d.Outcome != wantOutcome || !cmp.Equal(gotReasons, wantReasons) {
				t.Errorf("%s/%s: got %v %q, seed says %v %q", p.Name, ep.Name, d.Outcome, gotReasons, wantOutcome, wantReasons)
			}
			// Source-outside-grant names the source; the seed's text is its prefix.
			for _, r := range gotReasons {
				if strings.Contains(r, "%!") {
					t.Errorf("malformed detail %q", r)
				}
			}
		}
	}
}
