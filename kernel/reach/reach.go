package reach

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ambitkernel/ambit/kernel/contract"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/money"
)

// Family is one of the seed's failure families.
type Family string

// The failure families, in report order: the seed's seven, with
// irreversibility (coupling rule 2, the extended corpus's family) before
// the reflexive ones.
const (
	Provenance       Family = "provenance"
	FieldScope       Family = "field scope"
	StateFreshness   Family = "state freshness"
	Destination      Family = "destination"
	CumulativeAmount Family = "cumulative amount"
	Irreversibility  Family = "irreversibility"
	SelfQuery        Family = "self-query"
	ContractMutation Family = "contract mutation"
)

// Families lists every failure family in report order.
func Families() []Family {
	return []Family{Provenance, FieldScope, StateFreshness, Destination, CumulativeAmount, Irreversibility, SelfQuery, ContractMutation}
}

// ParseFamily returns the family with the given name.
func ParseFamily(s string) (Family, bool) {
	for _, f := range Families() {
		if string(f) == s {
			return f, true
		}
	}
	return "", false
}

func familyIndex(f Family) int { return slices.Index(Families(), f) }

// Apertures and the components that grant their routes.
const (
	ApertureEpistemic = "E"
	ApertureExecutive = "A"
	ApertureReflexive = "R"

	EvidenceAdapter = "evidence adapter"
	ActionAdapter   = "action adapter"
	Kernel          = "kernel"
)

// Forms of an evidence route, from least to most released.
const (
	FormQuarantined = "quarantined"
	FormDerived     = "derived"
	FormRaw         = "raw"
)

// secretFacts are the self-facts whose reading is itself a bad choice:
// thresholds to optimise against, credentials, the boundary.
var secretFacts = []string{"policy_thresholds", "credentials", "contract"}

// Route is one relation the contract grants.
type Route struct {
	// Key identifies the route across contracts, e.g. "E hr_db.salary",
	// "A pay -> payee", "R read contract".
	Key       string   `json:"key"`
	Aperture  string   `json:"aperture"`
	Component string   `json:"granted_by"`
	Families  []Family `json:"failure_families"`

	// E
	Source     string `json:"source,omitempty"`
	Field      string `json:"field,omitempty"`
	Provenance string `json:"provenance,omitempty"`
	Form       string `json:"form,omitempty"`
	// Confined: reads stay on the task's record.
	Confined bool `json:"confined,omitempty"`

	// A
	Tool        string `json:"tool,omitempty"`
	Destination string `json:"destination,omitempty"`
	// Bounds describes the amount bound, approval threshold, cumulative
	// cap and action count, e.g. "amount <= GBP 100.00, approval over
	// GBP 50.00, 1 action".
	Bounds       string `json:"bounds,omitempty"`
	Irreversible bool   `json:"irreversible,omitempty"`

	// R
	Fact string `json:"fact,omitempty"`

	// What the route's width is compared by (not reported).
	provenance contractv1.Provenance
	// when is a destination's condition or a derived field's expression.
	when  string
	grant *contractv1.ToolGrant
}

// Carries reports whether the route carries f.
func (r *Route) Carries(f Family) bool { return slices.Contains(r.Families, f) }

// Inventory is a contract's routes and its Ω.
type Inventory struct {
	Contract string  `json:"contract"`
	Version  string  `json:"version"`
	Routes   []Route `json:"routes"`
	// Pairs is the number of (route, failure family) pairs.
	Pairs int `json:"route_family_pairs"`
	// Omega is Ω(C) = len(Routes) + Pairs.
	Omega int `json:"omega"`

	proto *contractv1.Contract
}

// Of compiles c and lists its routes, each with the component that grants
// it and the failure families it carries. An invalid contract is an
// error.
func Of(c *contractv1.Contract) (*Inventory, error) {
	compiled, err := contract.Compile(c)
	if err != nil {
		return nil, fmt.Errorf("reach: %w", err)
	}
	inv := &Inventory{Contract: c.GetContractId(), Version: c.GetVersion(), proto: c}
	inv.Routes = append(inv.Routes, evidenceRoutes(c)...)
	inv.Routes = append(inv.Routes, actionRoutes(c, compiled)...)
	inv.Routes = append(inv.Routes, reflexiveRoutes(c)...)
	for i := range inv.Routes {
		r := &inv.Routes[i]
		slices.SortFunc(r.Families, func(a, b Family) int { return familyIndex(a) - familyIndex(b) })
		r.Families = slices.Compact(r.Families)
		if r.Families == nil {
			r.Families = []Family{}
		}
		inv.Pairs += len(r.Families)
	}
	inv.Omega = len(inv.Routes) + inv.Pairs
	return inv, nil
}

// Route returns the route with key, if the contract grants it.
func (inv *Inventory) Route(key string) (*Route, bool) {
	for i := range inv.Routes {
		if inv.Routes[i].Key == key {
			return &inv.Routes[i], true
		}
	}
	return nil, false
}

// FamilyRoutes counts, per family in report order, the routes carrying it.
func (inv *Inventory) FamilyRoutes() []FamilyCount {
	out := make([]FamilyCount, 0, len(Families()))
	for _, f := range Families() {
		n := 0
		for i := range inv.Routes {
			if inv.Routes[i].Carries(f) {
				n++
			}
		}
		out = append(out, FamilyCount{Family: f, Routes: n})
	}
	return out
}

// FamilyCount is the number of routes carrying one family.
type FamilyCount struct {
	Family Family `json:"family"`
	Routes int    `json:"routes"`
}

// ApertureRoutes counts the routes of one aperture ("E", "A" or "R").
func (inv *Inventory) ApertureRoutes(aperture string) int {
	n := 0
	for i := range inv.Routes {
		if inv.Routes[i].Aperture == aperture {
			n++
		}
	}
	return n
}

// Reachable reports whether any route carries f.
func (inv *Inventory) Reachable(f Family) bool {
	for i := range inv.Routes {
		if inv.Routes[i].Carries(f) {
			return true
		}
	}
	return false
}

func evidenceRoutes(c *contractv1.Contract) []Route {
	b, k := c.GetBinding(), c.GetCoupling()
	anyone := b.GetSubject() == "*" || b.GetPurpose() == "*"
	var out []Route
	for _, s := range c.GetEvidence().GetSources() {
		confined := b.GetRecord() != nil && (s.GetName() == b.GetRecord().GetSource() || s.GetRecordField() != "")
		add := func(field, form, derivation string) {
			r := Route{
				Key: "E " + s.GetName() + "." + field, Aperture: ApertureEpistemic, Component: EvidenceAdapter,
				Source: s.GetName(), Field: field, Provenance: provenanceName(s.GetProvenance()), Form: form, Confined: confined,
				provenance: s.GetProvenance(), when: derivation,
			}
			if s.GetProvenance() != contractv1.Provenance_PROVENANCE_TRUSTED && form != FormQuarantined && !k.GetRequireTrustedCorroboration() {
				r.Families = append(r.Families, Provenance)
			}
			if (form == FormRaw && !confined) || anyone {
				r.Families = append(r.Families, FieldScope)
			}
			out = append(out, r)
		}
		if contract.SourceFields(s) == nil {
			// A source that narrows nothing releases the aperture's fields
			// raw.
			for _, f := range c.GetEvidence().GetFields() {
				add(f, FormRaw, "")
			}
			continue
		}
		for _, f := range s.GetFields() {
			add(f, FormRaw, "")
		}
		for _, d := range s.GetDerived() {
			add(d.GetName(), FormDerived, d.GetExpression())
		}
		for _, q := range s.GetQuarantined() {
			add(q, FormQuarantined, "")
		}
	}
	return out
}

// untrustedSupport reports whether content from an untrusted or
// instruction-bearing source can support an effect: some such source
// releases a field that is not quarantined.
func untrustedSupport(c *contractv1.Contract) bool {
	for _, s := range c.GetEvidence().GetSources() {
		if s.GetProvenance() == contractv1.Provenance_PROVENANCE_TRUSTED {
			continue
		}
		fields := contract.SourceFields(s)
		if fields == nil {
			fields = c.GetEvidence().GetFields()
		}
		if len(fields) > len(s.GetQuarantined()) {
			return true
		}
	}
	return false
}

func actionRoutes(c *contractv1.Contract, compiled *contract.Compiled) []Route {
	a, b, k := c.GetAction(), c.GetBinding(), c.GetCoupling()
	if a.GetMaxActions() <= 0 {
		return nil // no action fits the count
	}
	provenance := !k.GetRequireTrustedCorroboration() && untrustedSupport(c)
	stale := b.GetStateVersion() == "*" && !k.GetRevokeOnStateChange()
	var out []Route
	for _, t := range a.GetTools() {
		if t.GetIrreversible() && !a.GetAllowIrreversible() {
			continue // every call is denied
		}
		bounds := toolBounds(a, t)
		for i, d := range t.GetDestinations() {
			r := Route{
				Key: "A " + t.GetName() + " -> " + d.GetName(), Aperture: ApertureExecutive, Component: ActionAdapter,
				Tool: t.GetName(), Destination: d.GetName(), Bounds: bounds, Irreversible: t.GetIrreversible(),
				when: d.GetWhen(), grant: t,
			}
			if provenance {
				r.Families = append(r.Families, Provenance)
			}
			if stale {
				r.Families = append(r.Families, StateFreshness)
			}
			if constantTrue(compiled.Tools[t.GetName()].Destinations[i].When) {
				r.Families = append(r.Families, Destination)
			}
			if t.GetAmountArgument() != "" && a.GetMaxCumulativeAmount() == nil && a.GetMaxActions() > 1 {
				r.Families = append(r.Families, CumulativeAmount)
			}
			if t.GetIrreversible() && (!k.GetIrreversibleRequiresApproval() || k.GetIrreversibleMaxEvidenceAgeSeconds() == 0) {
				r.Families = append(r.Families, Irreversibility)
			}
			out = append(out, r)
		}
	}
	return out
}

func reflexiveRoutes(c *contractv1.Contract) []Route {
	r, k := c.GetReflexive(), c.GetCoupling()
	var out []Route
	for _, f := range r.GetVisibleFacts() {
		route := Route{Key: "R read " + f, Aperture: ApertureReflexive, Component: Kernel, Fact: f}
		if slices.Contains(secretFacts, f) {
			route.Families = append(route.Families, SelfQuery)
		}
		out = append(out, route)
	}
	if k.GetForbidSelfMutation() {
		return out // rule 4 denies every change, granted or not
	}
	for _, f := range r.GetMutableFacts() {
		out = append(out, Route{Key: "R change " + f, Aperture: ApertureReflexive, Component: Kernel, Fact: f,
			Families: []Family{ContractMutation}})
	}
	return out
}

// constantTrue reports whether a destination condition holds whatever the
// call: it is true with no arguments, record, task or usage at all. A
// condition that reads any of them fails to evaluate on empty input.
func constantTrue(p *expr.Program) bool {
	ok, err := p.Bool(expr.Vars{})
	return err == nil && ok
}

func toolBounds(a *contractv1.ActionAperture, t *contractv1.ToolGrant) string {
	var parts []string
	if t.GetAmountArgument() != "" {
		parts = append(parts, "amount <= "+money.Format(a.GetMaxAmount()), "approval over "+money.Format(a.GetApprovalOver()))
		if m := a.GetMaxCumulativeAmount(); m != nil {
			parts = append(parts, "cumulative <= "+money.Format(m))
		}
	} else {
		parts = append(parts, "no amount")
	}
	if a.GetMaxActions() == 1 {
		parts = append(parts, "1 action")
	} else {
		parts = append(parts, fmt.Sprintf("%d actions", a.GetMaxActions()))
	}
	if t.GetIrreversible() {
		parts = append(parts, "irreversible")
	}
	return strings.Join(parts, ", ")
}

func provenanceName(p contractv1.Provenance) string {
	return strings.TrimPrefix(p.String(), "PROVENANCE_")
}
