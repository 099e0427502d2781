package cli

import (
	"fmt"
	"strings"

	"github.com/ambitkernel/ambit/kernel/chart"
	"github.com/ambitkernel/ambit/kernel/reach"
	"github.com/spf13/cobra"
)

func reachCmd(env *Env) *cobra.Command {
	cmd := leaf("reach CONTRACT...", "list a contract's routes, the component granting each, its failure families and Ω (several compare)")
	fs := cmd.Flags()
	format := fs.String("format", "text", "output format: text, json or svg")
	formats(cmd, "text", "json", "svg")
	cmd.ValidArgsFunction = profileNames
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := checkFormatOf(*format, "text", "json", "svg"); err != nil {
			return err
		}
		if len(args) == 0 {
			return fmt.Errorf("%w: reach needs CONTRACT (a file or a shipped profile), or several to compare", ErrUsage)
		}
		var invs []*reach.Inventory
		for _, arg := range args {
			c, err := loadContract(arg)
			if err != nil {
				return err
			}
			inv, err := reach.Of(c)
			if err != nil {
				return err
			}
			invs = append(invs, inv)
		}
		switch *format {
		case "json":
			if len(invs) == 1 {
				return writeJSON(env.Stdout, reachJSON(invs[0]))
			}
			var all []any
			for _, inv := range invs {
				all = append(all, reachJSON(inv))
			}
			return writeJSON(env.Stdout, all)
		case "svg":
			svg, err := chart.SVG(reachPanels(invs)...)
			if err != nil {
				return err
			}
			_, err = env.Stdout.Write(svg)
			return err
		}
		var parts []string
		for _, inv := range invs {
			parts = append(parts, reach.Text(inv))
		}
		_, err := fmt.Fprint(env.Stdout, strings.Join(parts, "\n"))
		return err
	}
	return cmd
}

type reachReport struct {
	*reach.Inventory
	Families []reach.FamilyCount `json:"families"`
}

func reachJSON(inv *reach.Inventory) reachReport {
	return reachReport{Inventory: inv, Families: inv.FamilyRoutes()}
}

// reachPanels draws Ω and the routes per aperture of each contract, and the
// routes carrying each failure family.
func reachPanels(invs []*reach.Inventory) []chart.Panel {
	var names []string
	size := []chart.Series{{Name: "E routes"}, {Name: "A routes"}, {Name: "R routes"}, {Name: "route-family pairs"}, {Name: "Ω"}}
	var families []string
	for _, f := range reach.Families() {
		families = append(families, string(f))
	}
	var carried []chart.Series
	for _, inv := range invs {
		names = append(names, inv.Contract)
		for i, v := range []int{inv.ApertureRoutes(reach.ApertureEpistemic), inv.ApertureRoutes(reach.ApertureExecutive),
			inv.ApertureRoutes(reach.ApertureReflexive), inv.Pairs, inv.Omega} {
			size[i].Values = append(size[i].Values, float64(v))
		}
		s := chart.Series{Name: inv.Contract}
		for _, fc := range inv.FamilyRoutes() {
			s.Values = append(s.Values, float64(fc.Routes))
		}
		carried = append(carried, s)
	}
	return []chart.Panel{
		{Title: "Reach Ω(C) = routes + (route, failure family) pairs", YLabel: "count", Categories: names, Series: size},
		{Title: "Routes carrying each failure family", YLabel: "routes", Categories: families, Series: carried},
	}
}
