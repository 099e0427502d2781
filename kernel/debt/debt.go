package debt

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/reach"
	"github.com/ambitkernel/ambit/kernel/suite"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

// Rerun is one group of episodes re-run: a failure family the widening
// touches, or the legitimate baseline (suite.Baseline), with the measures
// under the older and the newer contract.
type Rerun struct {
	Family   string         `json:"family"`
	Episodes int            `json:"episodes"`
	Old      suite.Measures `json:"old"`
	New      suite.Measures `json:"new"`
}

// Debt is the contraction debt of widening one contract into another.
type Debt struct {
	Routes *reach.Diff `json:"reach"`
	// Corpora name the episodes re-run.
	Corpora []string `json:"corpora"`
	// Reruns are the baseline and every family to re-run, in report
	// order. A family the episodes do not inject has 0 episodes: its risk
	// is untested.
	Reruns []Rerun `json:"reruns"`
	// EpisodesToRerun counts the episodes of Reruns.
	EpisodesToRerun int `json:"episodes_to_rerun"`
	// All are the measures over every episode.
	All struct {
		Old suite.Measures `json:"old"`
		New suite.Measures `json:"new"`
	} `json:"all"`
}

// Compute compares newer with older and re-runs the episodes under both at
// instant now.
func Compute(older, newer *contractv1.Contract, corpora []string, episodes []suite.Episode, now time.Time) (*Debt, error) {
	oi, err := reach.Of(older)
	if err != nil {
		return nil, fmt.Errorf("debt: old contract: %w", err)
	}
	ni, err := reach.Of(newer)
	if err != nil {
		return nil, fmt.Errorf("debt: new contract: %w", err)
	}
	d := &Debt{Routes: reach.Compare(oi, ni), Corpora: corpora, Reruns: []Rerun{}}
	var profiles []suite.Profile
	for _, c := range []*contractv1.Contract{older, newer} {
		compiled, err := contract.Compile(c)
		if err != nil {
			return nil, fmt.Errorf("debt: %w", err)
		}
		profiles = append(profiles, suite.Profile{Name: c.GetContractId(), Contract: compiled.Eval})
	}
	report, err := suite.Evaluate(profiles, corpora, episodes, now)
	if err != nil {
		return nil, fmt.Errorf("debt: %w", err)
	}
	d.All.Old, d.All.New = report.Profiles[0].All, report.Profiles[1].All
	groups := []string{suite.Baseline}
	for _, f := range d.Routes.RerunFamilies() {
		groups = append(groups, string(f))
	}
	for _, g := range groups {
		r := Rerun{Family: g}
		i := slices.IndexFunc(report.Profiles[0].Families, func(f suite.FamilyMeasures) bool { return f.Family == g })
		if i >= 0 {
			r.Old, r.New = report.Profiles[0].Families[i].Measures, report.Profiles[1].Families[i].Measures
			r.Episodes = r.New.Episodes
		}
		d.EpisodesToRerun += r.Episodes
		d.Reruns = append(d.Reruns, r)
	}
	return d, nil
}

// Record is the ledger's debt record of d for the contract items oldRef
// and newRef, with the reruns' results under the newer contract and the
// approver's decision.
func Record(d *Debt, oldRef, newRef string, decision ledgerv1.AssuranceDecision, rationale string) *ledgerv1.DebtRecord {
	rec := &ledgerv1.DebtRecord{
		OldContractRef: oldRef,
		NewContractRef: newRef,
		AddedRoutes:    d.Routes.DebtRoutes(),
		RelaxedLimits:  d.Routes.RelaxedLimits(),
		Decision:       decision,
		Rationale:      rationale,
	}
	ref := "suite:" + strings.Join(d.Corpora, "+")
	for _, r := range d.Reruns {
		m := r.New
		rec.Reruns = append(rec.Reruns, &ledgerv1.FamilyRerun{
			FailureFamily: r.Family, EpisodesRef: ref, Episodes: int32(m.Episodes), Completed: int32(m.Completed),
			UnsafeEffects: int32(m.UnsafeEffects), ConfidentialityExposures: int32(m.ConfidentialityExposures),
			FalseDenials: int32(m.FalseDenials), Reviews: int32(m.ReviewLoad),
		})
	}
	return rec
}

// Text renders the debt: the route diff, the reruns with their results
// under both contracts, and the change in review load.
func Text(d *Debt) string {
	var b strings.Builder
	b.WriteString(reach.DiffText(d.Routes))
	total := d.All.New.Episodes
	fmt.Fprintf(&b, "\nepisodes to re-run: %d of %d (%s), old -> new\n", d.EpisodesToRerun, total, strings.Join(d.Corpora, ", "))
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  family\tepisodes\tcompletion\tunsafe effects\tconfidentiality exposures\tfalse denials\treview load")
	for _, r := range d.Reruns {
		if r.Episodes == 0 {
			fmt.Fprintf(w, "  %s\t0\tnot injected by these episodes: untested\t\t\t\t\n", r.Family)
			continue
		}
		fmt.Fprintf(w, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Family, r.Episodes,
			change(r.Old.Completed, r.New.Completed), change(r.Old.UnsafeEffects, r.New.UnsafeEffects),
			change(r.Old.ConfidentialityExposures, r.New.ConfidentialityExposures),
			change(r.Old.FalseDenials, r.New.FalseDenials), change(r.Old.ReviewLoad, r.New.ReviewLoad))
	}
	_ = w.Flush()
	fmt.Fprintf(&b, "\nreview load over all %d episodes: %s (%+d)\n", total, change(d.All.Old.ReviewLoad, d.All.New.ReviewLoad), d.All.New.ReviewLoad-d.All.Old.ReviewLoad)
	fmt.Fprintf(&b, "unsafe effects: %s; confidentiality exposures: %s; false denials: %s\n",
		change(d.All.Old.UnsafeEffects, d.All.New.UnsafeEffects), change(d.All.Old.ConfidentialityExposures, d.All.New.ConfidentialityExposures),
		change(d.All.Old.FalseDenials, d.All.New.FalseDenials))
	return b.String()
}

func change(o, n int) string { return fmt.Sprintf("%d -> %d", o, n) }
