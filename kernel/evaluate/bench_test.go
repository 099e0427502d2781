package evaluate_test

import (
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/suite"
)

// The two benchmarks decide the same work — every episode of the seed and
// extended corpora under all four shipped profiles — so that their
// ns/decision figures compare directly: Evaluate returns typed reasons, the
// seed port returns strings.

func benchCorpus(b *testing.B) ([]suite.Profile, []*evaluate.Facts) {
	all, seed, ext := loadSuite(b)
	// The four profiles of the seed's method (unrestricted, action-only,
	// evidence-plus-action, coupled), so that the figure compares across
	// versions; coupled-strict has a benchmark of its own below.
	var profiles []suite.Profile
	for _, p := range all {
		if p.Name != "coupled-strict" {
			profiles = append(profiles, p)
		}
	}
	var facts []*evaluate.Facts
	for _, eps := range [][]suite.Episode{seed, ext} {
		for i := range eps {
			facts = append(facts, eps[i].EvalFacts())
		}
	}
	return profiles, facts
}

func BenchmarkEvaluate(b *testing.B) {
	profiles, facts := benchCorpus(b)
	var d evaluate.Decision
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		for _, p := range profiles {
			for _, f := range facts {
				if err := evaluate.Evaluate(f, p.Contract, suite.Now, &d); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/decision")
	b.ReportMetric(float64(len(profiles)*len(facts)), "decisions/op")
}

func BenchmarkSeedPort(b *testing.B) {
	profiles, facts := benchCorpus(b)
	specs := make([]*seedSpec, len(profiles))
	for i, p := range profiles {
		specs[i] = toSeedSpec(p.Contract)
	}
	proposals := make([]*seedProposal, len(facts))
	for i, f := range facts {
		proposals[i] = toSeedProposal(f)
	}
	denyBuf, reviewBuf := make([]string, 0, 16), make([]string, 0, 16)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		for _, s := range specs {
			for _, p := range proposals {
				seedEvaluate(p, s, suite.Now, denyBuf, reviewBuf)
				n++
			}
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/decision")
	b.ReportMetric(float64(len(specs)*len(proposals)), "decisions/op")
}
