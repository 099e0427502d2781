package suite

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/reach"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/document"
	"google.golang.org/protobuf/encoding/protojson"
)

// Now is the instant the seed's suite is evaluated at.
var Now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Corpus names.
const (
	Seed      = "seed"
	Extended  = "extended"
	SelfQuery = "self-query"
)

// Corpora lists the shipped corpora in report order.
func Corpora() []string { return []string{Seed, Extended, SelfQuery} }

//go:embed episodes/*.jsonl
var episodeFS embed.FS

// Episode is one labelled proposal.
type Episode struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	// Injects names the failure family (a reach.Family) the episode
	// injects; empty for the legitimate baseline.
	Injects              string `json:"injects,omitempty"`
	Legitimate           bool   `json:"legitimate"`
	Hazardous            bool   `json:"hazardous,omitempty"`
	ConfidentialityProbe bool   `json:"confidentiality_probe,omitempty"`
	// ApprovalRequired marks a legitimate episode the task's policy sends
	// to an independent approval: a REVIEW that an approval settles is its
	// expected outcome, and an ALLOW without one skips an obligation.
	ApprovalRequired bool `json:"approval_required,omitempty"`
	// Facts in protojson.
	Facts json.RawMessage `json:"facts"`

	facts evaluate.Facts
	proto *contractv1.Facts
}

// EvalFacts returns the decoded evaluator input.
func (e *Episode) EvalFacts() *evaluate.Facts { return &e.facts }

// ProtoFacts returns the decoded wire facts.
func (e *Episode) ProtoFacts() *contractv1.Facts { return e.proto }

// Load reads one shipped corpus ("seed" or "extended").
func Load(name string) ([]Episode, error) {
	data, err := episodeFS.ReadFile("episodes/" + name + ".jsonl")
	if err != nil {
		return nil, fmt.Errorf("load corpus %q: %w", name, err)
	}
	return Parse(name, data)
}

// Parse decodes a JSONL corpus, one episode per line.
func Parse(name string, data []byte) ([]Episode, error) {
	var out []Episode
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var e Episode
		if err := document.Decode([]byte(text), &e); err != nil {
			return nil, fmt.Errorf("corpus %s line %d: %w", name, line, err)
		}
		e.proto = &contractv1.Facts{}
		if err := protojson.Unmarshal(e.Facts, e.proto); err != nil {
			return nil, fmt.Errorf("corpus %s line %d (%s): facts: %w", name, line, e.Name, err)
		}
		if err := contract.ValidateFacts(e.proto); err != nil {
			return nil, fmt.Errorf("corpus %s line %d (%s): %w", name, line, e.Name, err)
		}
		if _, ok := reach.ParseFamily(e.Injects); e.Injects != "" && !ok {
			return nil, fmt.Errorf("corpus %s line %d (%s): injects: unknown failure family %q", name, line, e.Name, e.Injects)
		}
		if e.ApprovalRequired && !e.Legitimate {
			return nil, fmt.Errorf("corpus %s line %d (%s): approval_required is for legitimate episodes", name, line, e.Name)
		}
		e.facts = contract.Facts(e.proto)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("corpus %s: %w", name, err)
	}
	return out, nil
}

// Metrics are the seed's five counts for one profile.
type Metrics struct {
	LegitimateAllowed        int `json:"legitimate_allowed"`
	UnsafeAllowed            int `json:"unsafe_allowed"`
	ConfidentialityExposures int `json:"confidentiality_exposures"`
	Reviews                  int `json:"reviews"`
	Denials                  int `json:"denials"`
}

// Add counts one decided episode.
func (m *Metrics) Add(e *Episode, o evaluate.Outcome) {
	if e.Legitimate && o == evaluate.Allow {
		m.LegitimateAllowed++
	}
	if e.Hazardous && o == evaluate.Allow {
		m.UnsafeAllowed++
	}
	if e.ConfidentialityProbe && o == evaluate.Allow {
		m.ConfidentialityExposures++
	}
	switch o {
	case evaluate.Review:
		m.Reviews++
	case evaluate.Deny:
		m.Denials++
	}
}

// Profile is a named compiled contract.
type Profile struct {
	Name     string
	Contract *evaluate.Contract
}

// ShippedProfiles compiles the four shipped profiles in report order.
func ShippedProfiles() ([]Profile, error) {
	var out []Profile
	for _, name := range contract.ProfileNames() {
		c, err := contract.Profile(name)
		if err != nil {
			return nil, err
		}
		compiled, err := contract.Compile(c)
		if err != nil {
			return nil, err
		}
		out = append(out, Profile{Name: name, Contract: compiled.Eval})
	}
	return out, nil
}

// Result is one profile's metrics on one corpus.
type Result struct {
	Profile string  `json:"profile"`
	Metrics Metrics `json:"metrics"`
}

// Run evaluates every episode under every profile at instant now.
func Run(profiles []Profile, episodes []Episode, now time.Time) ([]Result, error) {
	var d evaluate.Decision
	out := make([]Result, 0, len(profiles))
	for _, p := range profiles {
		r := Result{Profile: p.Name}
		for i := range episodes {
			if err := evaluate.Evaluate(&episodes[i].facts, p.Contract, now, &d); err != nil {
				return nil, fmt.Errorf("profile %s, episode %s: %w", p.Name, episodes[i].Name, err)
			}
			r.Metrics.Add(&episodes[i], d.Outcome)
		}
		out = append(out, r)
	}
	return out, nil
}

// Format prints results as the seed's table.
func Format(results []Result) string {
	headers := []string{"profile", "legitimate_allowed", "unsafe_allowed", "confidentiality_exposures", "reviews", "denials"}
	rows := [][]string{headers}
	for _, r := range results {
		m := r.Metrics
		rows = append(rows, []string{r.Profile,
			fmt.Sprint(m.LegitimateAllowed), fmt.Sprint(m.UnsafeAllowed),
			fmt.Sprint(m.ConfidentialityExposures), fmt.Sprint(m.Reviews), fmt.Sprint(m.Denials)})
	}
	widths := make([]int, len(headers))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len(cell))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, cell := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == len(row)-1 {
				b.WriteString(cell)
			} else {
				fmt.Fprintf(&b, "%-*s", widths[i], cell)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
