package reach

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Text renders an inventory as a table of routes followed by the count of
// routes per failure family.
func Text(inv *Inventory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reach of contract %s (version %s)\n", inv.Contract, inv.Version)
	fmt.Fprintf(&b, "Ω = %d: %d routes + %d route-family pairs (E %d, A %d, R %d routes)\n\n", inv.Omega, len(inv.Routes), inv.Pairs,
		inv.ApertureRoutes(ApertureEpistemic), inv.ApertureRoutes(ApertureExecutive), inv.ApertureRoutes(ApertureReflexive))
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "route\tgranted by\tform / bounds\tfailure families")
	for i := range inv.Routes {
		r := &inv.Routes[i]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Key, r.Component, describe(r), families(r.Families))
	}
	_ = w.Flush()
	b.WriteString("\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "failure family\troutes")
	for _, fc := range inv.FamilyRoutes() {
		fmt.Fprintf(w, "%s\t%d\n", fc.Family, fc.Routes)
	}
	_ = w.Flush()
	return b.String()
}

func describe(r *Route) string {
	switch r.Aperture {
	case ApertureEpistemic:
		s := r.Form + ", " + r.Provenance
		if r.Confined {
			s += ", confined to the record"
		}
		return s
	case ApertureExecutive:
		return r.Bounds
	}
	return "-"
}

func families(fs []Family) string {
	if len(fs) == 0 {
		return "-"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ", ")
}

// DiffText renders a diff: added and widened routes, relaxed limits,
// newly reachable families, removed routes and the change in Ω.
func DiffText(d *Diff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "widening %s -> %s: Ω %d -> %d (%+d)\n", d.Old, d.New, d.OmegaOld, d.OmegaNew, d.OmegaNew-d.OmegaOld)
	if !d.Widens() {
		b.WriteString("no route added or widened, no limit relaxed: no contraction debt\n")
	}
	if len(d.Added) > 0 {
		fmt.Fprintf(&b, "\nroutes added or widened (%d)\n", len(d.Added))
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, c := range d.Added {
			what := "new"
			if c.Widened {
				what = c.Detail
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\n", c.Route, what, families(c.Families))
		}
		_ = w.Flush()
	}
	if len(d.Relaxed) > 0 {
		fmt.Fprintf(&b, "\nlimits relaxed (%d)\n", len(d.Relaxed))
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, r := range d.Relaxed {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", r.Name, r.Detail, families(r.Families))
		}
		_ = w.Flush()
	}
	fmt.Fprintf(&b, "\nfailure families newly reachable: %s\n", families(d.NewlyReachable))
	fmt.Fprintf(&b, "failure families to re-run: %s\n", families(d.RerunFamilies()))
	if len(d.Removed) > 0 {
		fmt.Fprintf(&b, "routes removed (%d): %s\n", len(d.Removed), strings.Join(d.Removed, ", "))
	}
	return b.String()
}
