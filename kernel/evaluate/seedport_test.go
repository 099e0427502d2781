package evaluate_test

import (
	"fmt"
	"sort"
	"time"

	"github.com/ambitkernel/ambit/kernel/evaluate"
)

// This file is a straightforward hand port of the seed's evaluate(): sets
// are maps, reasons are strings. It is the reference the typed evaluator is
// checked against, reason for reason, and the baseline its benchmark is
// measured beside.

type seedSpec struct {
	subject, purpose, stateVersion string
	validUntil                     time.Time
	fields, sources                map[string]bool
	maxAge                         int64
	actionTypes, destinations      map[string]bool
	maxAmount, approvalOver        int64
	maxActions                     int32
	allowIrreversible              bool
	visible, mutable               map[string]bool
}

type seedProposal struct {
	subject, purpose, stateVersion string
	fields                         []string
	source                         string
	age                            int64
	actionType, destination        string
	amount                         int64
	actionCount                    int32
	irreversible, approval         bool
	selfQueries, selfMutations     []string
}

func set(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}

func toSeedSpec(c *evaluate.Contract) *seedSpec {
	sources := map[string]bool{}
	for _, s := range c.Sources {
		sources[s.Name] = true
	}
	// The seed has one list of destinations for every action type.
	tools, destinations := map[string]bool{}, map[string]bool{}
	for _, t := range c.Tools {
		tools[t.Name] = true
		for _, d := range t.Destinations {
			destinations[d] = true
		}
	}
	return &seedSpec{
		subject: c.Subject, purpose: c.Purpose, stateVersion: c.StateVersion, validUntil: c.ValidUntil,
		fields: set(c.Fields), sources: sources, maxAge: c.MaxAgeSeconds,
		actionTypes: tools, destinations: destinations,
		maxAmount: c.MaxAmount.Minor, approvalOver: c.ApprovalOver.Minor, maxActions: c.MaxActions,
		allowIrreversible: c.AllowIrreversible,
		visible:           set(c.VisibleFacts), mutable: set(c.MutableFacts),
	}
}

func toSeedProposal(f *evaluate.Facts) *seedProposal {
	count := f.ActionCount
	if count == 0 {
		count = 1
	}
	return &seedProposal{
		subject: f.Subject, purpose: f.Purpose, stateVersion: f.StateVersion,
		fields: f.Evidence[0].Fields, source: f.Evidence[0].Source, age: f.Evidence[0].AgeSeconds,
		actionType: f.Tool, destination: f.Destination, amount: f.Amount.Minor,
		actionCount: count, irreversible: f.Irreversible, approval: f.ApprovalPresent,
		selfQueries: f.SelfQueries, selfMutations: f.SelfMutations,
	}
}

func minus(asked []string, grant map[string]bool) []string {
	var out []string
	for _, s := range asked {
		if !grant[s] {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// seedEvaluate mirrors the seed line by line; denyBuf and reviewBuf are
// reusable buffers so the port does not allocate on the common path.
func seedEvaluate(p *seedProposal, s *seedSpec, now time.Time, denyBuf, reviewBuf []string) (evaluate.Outcome, []string) {
	deny, review := denyBuf[:0], reviewBuf[:0]

	if now.After(s.validUntil) {
		review = append(review, "contract expired")
	}
	if s.subject != "*" && p.subject != s.subject {
		deny = append(deny, "subject mismatch")
	}
	if s.purpose != "*" && p.purpose != s.purpose {
		deny = append(deny, "purpose mismatch")
	}
	if s.stateVersion != "*" && p.stateVersion != s.stateVersion {
		review = append(review, "state version changed")
	}

	if unexpected := minus(p.fields, s.fields); len(unexpected) > 0 {
		deny = append(deny, fmt.Sprintf("fields outside grant: %v", unexpected))
	}
	if !s.sources[p.source] {
		deny = append(deny, "evidence source outside grant")
	}
	if p.age > s.maxAge {
		review = append(review, "evidence is too old")
	}

	if !s.actionTypes[p.actionType] {
		deny = append(deny, "action type outside grant")
	}
	if !s.destinations[p.destination] {
		deny = append(deny, "destination outside grant")
	}
	if p.amount > s.maxAmount {
		deny = append(deny, "amount exceeds hard limit")
	} else if p.amount > s.approvalOver && !p.approval {
		review = append(review, "independent approval required")
	}
	if p.actionCount > s.maxActions {
		deny = append(deny, "action count exceeds grant")
	}
	if p.irreversible && !s.allowIrreversible {
		deny = append(deny, "irreversible effect not permitted")
	}

	if hidden := minus(p.selfQueries, s.visible); len(hidden) > 0 {
		deny = append(deny, fmt.Sprintf("self facts outside view: %v", hidden))
	}
	if forbidden := minus(p.selfMutations, s.mutable); len(forbidden) > 0 {
		deny = append(deny, fmt.Sprintf("self mutations outside grant: %v", forbidden))
	}

	if len(deny) > 0 {
		return evaluate.Deny, append(deny, review...)
	}
	if len(review) > 0 {
		return evaluate.Review, review
	}
	return evaluate.Allow, append(deny, "all three apertures satisfied")
}
