package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ambitkernel/ambit/kernel/suite"
)

type suiteReport struct {
	Episodes map[string]int  `json:"episodes"`
	Profiles []profileReport `json:"profiles"`
}

type profileReport struct {
	Profile  string        `json:"profile"`
	Seed     suite.Metrics `json:"seed"`
	Extended suite.Metrics `json:"extended"`
}

func runSuite(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "suite")
	format := fs.String("format", "text", "output format: text or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	profiles, err := suite.ShippedProfiles()
	if err != nil {
		return err
	}
	seed, err := suite.Load(suite.Seed)
	if err != nil {
		return err
	}
	ext, err := suite.Load(suite.Extended)
	if err != nil {
		return err
	}
	all := append(append([]suite.Episode(nil), seed...), ext...)
	seedResults, err := suite.Run(profiles, seed, suite.Now)
	if err != nil {
		return err
	}
	allResults, err := suite.Run(profiles, all, suite.Now)
	if err != nil {
		return err
	}
	if *format == "json" {
		r := suiteReport{Episodes: map[string]int{"seed": len(seed), "extended": len(all)}}
		for i := range seedResults {
			r.Profiles = append(r.Profiles, profileReport{
				Profile: seedResults[i].Profile, Seed: seedResults[i].Metrics, Extended: allResults[i].Metrics,
			})
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(env.Stdout, "seed suite (%d episodes, evaluated at %s)\n", len(seed), suite.Now.Format("2006-01-02T15:04:05Z07:00"))
	fmt.Fprint(env.Stdout, suite.Format(seedResults))
	fmt.Fprintf(env.Stdout, "\nextended suite (%d episodes: the seed's plus provenance, cumulative, irreversible, self-mutation and state-change families)\n", len(all))
	fmt.Fprint(env.Stdout, suite.Format(allResults))
	return nil
}
