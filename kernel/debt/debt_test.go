package debt_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/debt"
	"github.com/ambitkernel/ambit/kernel/suite"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

func compute(t *testing.T, older, newer string, corpora ...string) *debt.Debt {
	t.Helper()
	var eps []suite.Episode
	for _, c := range corpora {
		e, err := suite.Load(c)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, e...)
	}
	o, err := contract.Profile(older)
	if err != nil {
		t.Fatal(err)
	}
	n, err := contract.Profile(newer)
	if err != nil {
		t.Fatal(err)
	}
	d, err := debt.Compute(o, n, corpora, eps, suite.Now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWidening: widening coupled into evidence-plus-action reaches the
// self-query and contract-mutation families and state freshness; the
// debt names them, re-runs their episodes under both contracts and shows
// what the widening lets through and the review load it saves.
func TestWidening(t *testing.T) {
	d := compute(t, "coupled", "evidence-plus-action", suite.Corpora()...)
	if !d.Routes.Widens() {
		t.Fatal("no widening found")
	}
	var families []string
	for _, r := range d.Reruns {
		families = append(families, r.Family)
	}
	want := []string{suite.Baseline, "state freshness", "self-query", "contract mutation"}
	if !slices.Equal(families, want) {
		t.Errorf("reruns %v, want %v", families, want)
	}
	byFamily := map[string]debt.Rerun{}
	total := 0
	for _, r := range d.Reruns {
		byFamily[r.Family] = r
		total += r.Episodes
	}
	if total != d.EpisodesToRerun || d.EpisodesToRerun != 80+30+10+20 {
		t.Errorf("episodes to re-run: %d (sum %d)", d.EpisodesToRerun, total)
	}
	if r := byFamily["self-query"]; r.Old.ConfidentialityExposures != 0 || r.New.ConfidentialityExposures != 10 {
		t.Errorf("self-query exposures %d -> %d", r.Old.ConfidentialityExposures, r.New.ConfidentialityExposures)
	}
	if r := byFamily["contract mutation"]; r.Old.UnsafeEffects != 0 || r.New.UnsafeEffects != 20 {
		t.Errorf("contract mutation unsafe effects %d -> %d", r.Old.UnsafeEffects, r.New.UnsafeEffects)
	}
	if d.All.Old.ReviewLoad != 40 || d.All.New.ReviewLoad != 20 {
		t.Errorf("review load %d -> %d", d.All.Old.ReviewLoad, d.All.New.ReviewLoad)
	}
	text := debt.Text(d)
	for _, s := range []string{"R read credentials", "binding.state_version", "review load over all 280 episodes: 40 -> 20 (-20)"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
}

// TestUntestedFamily: a family the episodes do not inject is listed with
// no episodes, so the gap in the evidence shows.
func TestUntestedFamily(t *testing.T) {
	d := compute(t, "coupled", "evidence-plus-action", suite.Seed)
	for _, r := range d.Reruns {
		if r.Family == "self-query" && r.Episodes != 0 {
			t.Errorf("self-query has %d seed episodes", r.Episodes)
		}
	}
	if !strings.Contains(debt.Text(d), "self-query         0         not injected by these episodes: untested") {
		t.Errorf("text does not flag the untested family:\n%s", debt.Text(d))
	}
}

func TestNarrowingHasNoDebt(t *testing.T) {
	d := compute(t, "unrestricted", "coupled", suite.Seed)
	if d.Routes.Widens() || len(d.Reruns) != 1 || d.Reruns[0].Family != suite.Baseline {
		t.Errorf("narrowing has debt: %+v", d.Routes)
	}
}

// TestRecord: the ledger's record names the routes, limits and re-runs
// the debt computed, with the new contract's results.
func TestRecord(t *testing.T) {
	d := compute(t, "coupled", "evidence-plus-action", suite.Corpora()...)
	rec := debt.Record(d, "CTR-old", "CTR-new", ledgerv1.AssuranceDecision_ASSURANCE_DECISION_ACCEPTED, "why")
	if rec.GetOldContractRef() != "CTR-old" || rec.GetNewContractRef() != "CTR-new" || rec.GetRationale() != "why" {
		t.Errorf("record %v", rec)
	}
	if len(rec.GetAddedRoutes()) != len(d.Routes.Added) || len(rec.GetRelaxedLimits()) != len(d.Routes.Relaxed) || len(rec.GetReruns()) != len(d.Reruns) {
		t.Errorf("record has %d routes, %d limits, %d reruns", len(rec.GetAddedRoutes()), len(rec.GetRelaxedLimits()), len(rec.GetReruns()))
	}
	for i, r := range rec.GetReruns() {
		if r.GetEpisodesRef() != "suite:seed+extended+self-query" || int(r.GetUnsafeEffects()) != d.Reruns[i].New.UnsafeEffects {
			t.Errorf("rerun %d: %v", i, r)
		}
	}
}
