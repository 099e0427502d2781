package minimize

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Text renders the report: the counts before and after, then a line per
// element with its change, verdict, dependency and what it lets through.
func Text(r *Result, corpus string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "removal test of contract %s over %d episodes (%s)\n", r.Contract, r.Episodes, corpus)
	counts := func(label string, n Counts) {
		fmt.Fprintf(&b, "%-7s Ω %d; legitimate completed %d/%d (allowed %d); unsafe effects %d; confidentiality exposures %d; approvals skipped %d; reviews %d; denials %d\n",
			label, n.Omega, n.Completed, n.Legitimate, n.Allowed, n.UnsafeEffects, n.ConfidentialityExposures, n.ApprovalsSkipped, n.Reviews, n.Denials)
	}
	counts("before:", r.Before)
	counts("after:", r.After)
	b.WriteString("\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "element\tchange\tverdict\tneeded by (legitimate)\tenables (unsafe)")
	var notes []string
	for _, f := range r.Findings {
		lets := groups(f.Enables)
		if len(f.Prevents) > 0 {
			lets = "prevents " + groups(f.Prevents)
		}
		needed := groups(f.NeededBy)
		if f.Note != "" {
			notes = append(notes, f.Element+": "+f.Note)
			needed = fmt.Sprintf("(note %d)", len(notes))
			lets = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", f.Element, f.Change, f.Verdict, needed, lets)
	}
	_ = w.Flush()
	if len(notes) > 0 {
		b.WriteString("\nnotes:\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "  (%d) %s\n", i+1, n)
		}
	}
	if len(r.NotTested) > 0 {
		b.WriteString("\nnot tested:\n")
		for _, n := range r.NotTested {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	return b.String()
}

func groups(gs []Group) string {
	if len(gs) == 0 {
		return "-"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = fmt.Sprintf("%s x%d", g.Family, g.Episodes)
	}
	return strings.Join(parts, ", ")
}
