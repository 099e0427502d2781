package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ambitkernel/ambit/kernel/chart"
	"github.com/ambitkernel/ambit/kernel/suite"
	"github.com/spf13/cobra"
)

type suiteReport struct {
	Episodes map[string]int  `json:"episodes"`
	Profiles []profileReport `json:"profiles"`
	// Evaluation carries the six measures per profile and per injected
	// failure family, over every shipped corpus.
	Evaluation *suite.Report `json:"evaluation"`
}

type profileReport struct {
	Profile  string        `json:"profile"`
	Seed     suite.Metrics `json:"seed"`
	Extended suite.Metrics `json:"extended"`
}

func suiteCmd(env *Env) *cobra.Command {
	cmd := leaf("suite", "run the seed's episodes and the extended families over the shipped profiles")
	fs := cmd.Flags()
	format := fs.String("format", "text", "output format: text (the seed's table), json, markdown or svg (the evaluation report)")
	formats(cmd, "text", "json", "markdown", "svg")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := checkFormatOf(*format, "text", "json", "markdown", "svg"); err != nil {
			return err
		}
		if len(args) > 0 {
			return fmt.Errorf("%w: suite takes no arguments, got %q", ErrUsage, args)
		}
		profiles, err := suite.ShippedProfiles()
		if err != nil {
			return err
		}
		corpora := map[string][]suite.Episode{}
		var every []suite.Episode
		for _, name := range suite.Corpora() {
			eps, err := suite.Load(name)
			if err != nil {
				return err
			}
			corpora[name] = eps
			every = append(every, eps...)
		}
		seed := corpora[suite.Seed]
		all := append(append([]suite.Episode(nil), seed...), corpora[suite.Extended]...)
		seedResults, err := suite.Run(profiles, seed, suite.Now)
		if err != nil {
			return err
		}
		allResults, err := suite.Run(profiles, all, suite.Now)
		if err != nil {
			return err
		}
		report, err := suite.Evaluate(profiles, suite.Corpora(), every, suite.Now)
		if err != nil {
			return err
		}
		switch *format {
		case "json":
			r := suiteReport{Episodes: map[string]int{"seed": len(seed), "extended": len(all)}, Evaluation: report}
			for i := range seedResults {
				r.Profiles = append(r.Profiles, profileReport{
					Profile: seedResults[i].Profile, Seed: seedResults[i].Metrics, Extended: allResults[i].Metrics,
				})
			}
			return writeJSON(env.Stdout, r)
		case "markdown":
			_, err := fmt.Fprint(env.Stdout, suite.Markdown(report))
			return err
		case "svg":
			svg, err := chart.SVG(suitePanels(report)...)
			if err != nil {
				return err
			}
			_, err = env.Stdout.Write(svg)
			return err
		}
		fmt.Fprintf(env.Stdout, "seed suite (%d episodes, evaluated at %s)\n", len(seed), suite.Now.Format("2006-01-02T15:04:05Z07:00"))
		fmt.Fprint(env.Stdout, suite.Format(seedResults))
		fmt.Fprintf(env.Stdout, "\nextended suite (%d episodes: the seed's plus provenance, cumulative, irreversible, self-mutation and state-change families)\n", len(all))
		fmt.Fprint(env.Stdout, suite.Format(allResults))
		return nil
	}
	return cmd
}

// suitePanels draws the evaluation report: the counted measures per
// profile, what each injected family gets through per profile, and the two
// rates.
func suitePanels(r *suite.Report) []chart.Panel {
	var profiles []string
	measures := []chart.Series{{Name: "completed"}, {Name: "unsafe effects"}, {Name: "confidentiality exposures"}, {Name: "false denials"}, {Name: "review load"}}
	rates := []chart.Series{{Name: "completion %"}, {Name: "recovery quality %"}}
	var families []string
	for _, f := range r.Profiles[0].Families {
		if f.Family != suite.Baseline {
			families = append(families, f.Family)
		}
	}
	var leaks []chart.Series
	for _, p := range r.Profiles {
		profiles = append(profiles, p.Profile)
		m := p.All
		for i, v := range []int{m.Completed, m.UnsafeEffects, m.ConfidentialityExposures, m.FalseDenials, m.ReviewLoad} {
			measures[i].Values = append(measures[i].Values, float64(v))
		}
		rates[0].Values = append(rates[0].Values, percent(m.Completion))
		rates[1].Values = append(rates[1].Values, percent(m.RecoveryQuality))
		s := chart.Series{Name: p.Profile}
		for _, f := range p.Families {
			if f.Family != suite.Baseline {
				s.Values = append(s.Values, float64(f.UnsafeEffects+f.ConfidentialityExposures))
			}
		}
		leaks = append(leaks, s)
	}
	return []chart.Panel{
		{Title: fmt.Sprintf("Measures over %d episodes (%s), per profile", r.Episodes, strings.Join(r.Corpora, ", ")), YLabel: "episodes",
			Categories: profiles, Series: measures},
		{Title: "Unsafe effects and confidentiality exposures, per injected failure family", YLabel: "episodes let through",
			Categories: families, Series: leaks},
		{Title: "Completion, and recovery quality of refusals (no bar: nothing refused), per profile", YLabel: "%", Categories: profiles, Series: rates},
	}
}

func percent(r *float64) float64 {
	if r == nil {
		return 0
	}
	return *r * 100
}

// writeJSON renders v as indented JSON; "->" in route names stays
// readable.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// rawJSON embeds already rendered JSON in a value writeJSON renders.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
