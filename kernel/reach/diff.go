package reach

import (
	"fmt"
	"slices"
	"strings"
	"time"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/money"
	"google.golang.org/protobuf/proto"
)

// Change is one route a newer contract adds, or reaches further by.
type Change struct {
	Route string `json:"route"`
	// Widened is false for a new route, true for one that reaches further.
	Widened bool `json:"widened"`
	// Detail says what widened; empty for a new route.
	Detail string `json:"change,omitempty"`
	// Families the route newly carries (every family of a new route).
	Families []Family `json:"failure_families"`

	// implies are the families whose episodes test the change even where
	// it carries none (a changed condition, a new route).
	implies []Family
}

// Relaxation is one contract-wide limit a newer contract relaxes.
type Relaxation struct {
	// Name is the limit's field path, e.g. "action.max_amount".
	Name string `json:"limit"`
	// Detail is the change, e.g. "GBP 100.00 -> GBP 200.00".
	Detail   string   `json:"change"`
	Families []Family `json:"failure_families"`
}

// String is the limit and its change, e.g.
// "action.max_amount: GBP 100.00 -> GBP 200.00".
func (r Relaxation) String() string { return r.Name + ": " + r.Detail }

// Diff is what a newer contract adds to an older one.
type Diff struct {
	Old      string `json:"old"`
	New      string `json:"new"`
	OmegaOld int    `json:"omega_old"`
	OmegaNew int    `json:"omega_new"`
	// Added are the new and widened routes, sorted by route.
	Added []Change `json:"added_routes"`
	// Removed are the keys of the routes the newer contract drops.
	Removed []string `json:"removed_routes"`
	// Relaxed are the contract-wide limits it relaxes, in contract order.
	Relaxed []Relaxation `json:"relaxed_limits"`
	// NewlyReachable are the families no route of the older contract
	// carried and some route of the newer one does.
	NewlyReachable []Family `json:"newly_reachable_families"`
}

// Widens reports whether the newer contract reaches anything the older did
// not: a widening, with contraction debt to repay.
func (d *Diff) Widens() bool { return len(d.Added) > 0 || len(d.Relaxed) > 0 }

// RerunFamilies lists, in report order, the failure families whose
// episodes must be re-run before the widening is accepted: those the added
// routes carry or whose behaviour they change, and those of the relaxed
// limits.
func (d *Diff) RerunFamilies() []Family {
	var fs []Family
	for _, c := range d.Added {
		fs = append(fs, c.Families...)
		fs = append(fs, c.implies...)
	}
	for _, r := range d.Relaxed {
		fs = append(fs, r.Families...)
	}
	return ordered(fs)
}

// Compare lists what newer adds to older.
func Compare(older, newer *Inventory) *Diff {
	d := &Diff{Old: older.Contract, New: newer.Contract, OmegaOld: older.Omega, OmegaNew: newer.Omega,
		Added: []Change{}, Removed: []string{}, Relaxed: []Relaxation{}, NewlyReachable: []Family{}}
	for i := range newer.Routes {
		n := &newer.Routes[i]
		o, ok := older.Route(n.Key)
		if !ok {
			d.Added = append(d.Added, Change{Route: n.Key, Families: slices.Clone(n.Families), implies: []Family{aperturefamily(n.Aperture)}})
			continue
		}
		if c, widened := widening(o, n); widened {
			d.Added = append(d.Added, c)
		}
	}
	slices.SortFunc(d.Added, func(a, b Change) int { return strings.Compare(a.Route, b.Route) })
	for i := range older.Routes {
		if _, ok := newer.Route(older.Routes[i].Key); !ok {
			d.Removed = append(d.Removed, older.Routes[i].Key)
		}
	}
	slices.Sort(d.Removed)
	d.Relaxed = relaxed(older.proto, newer.proto)
	for _, f := range Families() {
		if newer.Reachable(f) && !older.Reachable(f) {
			d.NewlyReachable = append(d.NewlyReachable, f)
		}
	}
	return d
}

// aperturefamily is the family whose episodes test a new route of an
// aperture that carries no family of its own.
func aperturefamily(aperture string) Family {
	switch aperture {
	case ApertureEpistemic:
		return FieldScope
	case ApertureExecutive:
		return Destination
	}
	return SelfQuery
}

var formRank = map[string]int{FormQuarantined: 1, FormDerived: 2, FormRaw: 3}

// widening describes how n reaches further than o, the same route in an
// older contract.
func widening(o, n *Route) (Change, bool) {
	c := Change{Route: n.Key, Widened: true}
	var what []string
	for _, f := range n.Families {
		if !o.Carries(f) {
			c.Families = append(c.Families, f)
			what = append(what, "carries "+string(f))
		}
	}
	switch n.Aperture {
	case ApertureEpistemic:
		if n.provenance > o.provenance {
			what = append(what, fmt.Sprintf("provenance %s -> %s", o.Provenance, n.Provenance))
			c.implies = append(c.implies, Provenance)
		}
		if formRank[n.Form] > formRank[o.Form] {
			what = append(what, fmt.Sprintf("form %s -> %s", o.Form, n.Form))
			c.implies = append(c.implies, FieldScope)
		}
		if o.Confined && !n.Confined {
			what = append(what, "no longer confined to the task's record")
			c.implies = append(c.implies, FieldScope)
		}
		if n.Form == FormDerived && o.Form == FormDerived && n.when != o.when {
			what = append(what, "derivation changed")
			c.implies = append(c.implies, FieldScope)
		}
	case ApertureExecutive:
		if n.Irreversible && !o.Irreversible {
			what = append(what, "irreversible")
			c.implies = append(c.implies, Irreversibility)
		}
		if n.when != o.when {
			what = append(what, fmt.Sprintf("condition %q -> %q", o.when, n.when))
			c.implies = append(c.implies, Destination)
		}
		if t := toolChanges(o.grant, n.grant); len(t) > 0 {
			what = append(what, t...)
			c.implies = append(c.implies, Destination)
		}
	}
	c.Families = ordered(c.Families)
	c.implies = ordered(c.implies)
	c.Detail = strings.Join(what, "; ")
	return c, len(what) > 0
}

// toolChanges lists how a tool's declaration changed in ways that may let
// a call do more: its schema, its amount or record argument, or a
// constraint dropped or rewritten. Added constraints only narrow.
func toolChanges(o, n *contractv1.ToolGrant) []string {
	var out []string
	if !proto.Equal(o.GetInputSchema(), n.GetInputSchema()) {
		out = append(out, "argument schema changed")
	}
	if o.GetAmountArgument() != n.GetAmountArgument() {
		out = append(out, fmt.Sprintf("amount argument %q -> %q", o.GetAmountArgument(), n.GetAmountArgument()))
	}
	if !proto.Equal(o.GetRecord(), n.GetRecord()) {
		out = append(out, "record argument changed")
	}
	for _, k := range o.GetConstraints() {
		i := slices.IndexFunc(n.GetConstraints(), func(x *contractv1.Constraint) bool { return x.GetCode() == k.GetCode() })
		switch {
		case i < 0:
			out = append(out, "constraint "+k.GetCode()+" removed")
		case n.GetConstraints()[i].GetExpression() != k.GetExpression():
			out = append(out, "constraint "+k.GetCode()+" changed")
		}
	}
	return out
}

// relaxed lists the contract-wide limits newer relaxes, in contract order.
func relaxed(older, newer *contractv1.Contract) []Relaxation {
	out := []Relaxation{}
	add := func(name, detail string, fs ...Family) {
		out = append(out, Relaxation{Name: name, Detail: detail, Families: fs})
	}
	ob, nb := older.GetBinding(), newer.GetBinding()
	for _, b := range []struct {
		name     string
		old, new string
		families []Family
	}{
		{"binding.subject", ob.GetSubject(), nb.GetSubject(), []Family{FieldScope, Destination}},
		{"binding.purpose", ob.GetPurpose(), nb.GetPurpose(), []Family{FieldScope}},
		{"binding.state_version", ob.GetStateVersion(), nb.GetStateVersion(), []Family{StateFreshness}},
	} {
		if b.old != "*" && b.new != b.old {
			add(b.name, b.old+" -> "+b.new, b.families...)
		}
	}
	if or := ob.GetRecord(); or != nil && !proto.Equal(or, nb.GetRecord()) {
		add("binding.record", recordName(or)+" -> "+recordName(nb.GetRecord()), FieldScope, StateFreshness)
	}
	if nb.GetValidUntil().AsTime().After(ob.GetValidUntil().AsTime()) {
		add("binding.valid_until", ob.GetValidUntil().AsTime().Format(time.RFC3339)+" -> "+nb.GetValidUntil().AsTime().Format(time.RFC3339), StateFreshness)
	}
	if o, n := older.GetEvidence().GetMaxAgeSeconds(), newer.GetEvidence().GetMaxAgeSeconds(); n > o {
		add("evidence.max_age_seconds", fmt.Sprintf("%d -> %d", o, n), StateFreshness)
	}
	oa, na := older.GetAction(), newer.GetAction()
	if moneyRelaxed(oa.GetMaxAmount(), na.GetMaxAmount()) {
		add("action.max_amount", money.Format(oa.GetMaxAmount())+" -> "+money.Format(na.GetMaxAmount()), CumulativeAmount)
	}
	if moneyRelaxed(oa.GetApprovalOver(), na.GetApprovalOver()) {
		add("action.approval_over", money.Format(oa.GetApprovalOver())+" -> "+money.Format(na.GetApprovalOver()), CumulativeAmount)
	}
	if n, o := na.GetMaxActions(), oa.GetMaxActions(); n > o {
		add("action.max_actions", fmt.Sprintf("%d -> %d", o, n), CumulativeAmount)
	}
	if o, n := oa.GetMaxCumulativeAmount(), na.GetMaxCumulativeAmount(); o != nil && (n == nil || moneyRelaxed(o, n)) {
		to := "none"
		if n != nil {
			to = money.Format(n)
		}
		add("action.max_cumulative_amount", money.Format(o)+" -> "+to, CumulativeAmount)
	}
	if na.GetAllowIrreversible() && !oa.GetAllowIrreversible() {
		add("action.allow_irreversible", "false -> true", Irreversibility)
	}
	ok, nk := older.GetCoupling(), newer.GetCoupling()
	for _, s := range []struct {
		name     string
		old, new bool
		family   Family
	}{
		{"coupling.require_trusted_corroboration", ok.GetRequireTrustedCorroboration(), nk.GetRequireTrustedCorroboration(), Provenance},
		{"coupling.irreversible_requires_approval", ok.GetIrreversibleRequiresApproval(), nk.GetIrreversibleRequiresApproval(), Irreversibility},
		{"coupling.revoke_on_state_change", ok.GetRevokeOnStateChange(), nk.GetRevokeOnStateChange(), StateFreshness},
		{"coupling.forbid_self_mutation", ok.GetForbidSelfMutation(), nk.GetForbidSelfMutation(), ContractMutation},
	} {
		if s.old && !s.new {
			add(s.name, "true -> false", s.family)
		}
	}
	if o, n := ok.GetIrreversibleMaxEvidenceAgeSeconds(), nk.GetIrreversibleMaxEvidenceAgeSeconds(); o > 0 && (n == 0 || n > o) {
		add("coupling.irreversible_max_evidence_age_seconds", fmt.Sprintf("%d -> %d", o, n), Irreversibility)
	}
	return out
}

// moneyRelaxed reports whether limit n allows more than o: a higher
// amount, or another currency.
func moneyRelaxed(o, n *contractv1.Money) bool {
	if o == nil || n == nil {
		return o != nil || n != nil
	}
	return n.GetCurrencyCode() != o.GetCurrencyCode() || n.GetMinorUnits() > o.GetMinorUnits()
}

func recordName(r *contractv1.RecordRef) string {
	if r == nil {
		return "none"
	}
	return r.GetSource() + "/" + r.GetKey()
}

// ordered deduplicates fs into report order.
func ordered(fs []Family) []Family {
	out := []Family{}
	for _, f := range Families() {
		if slices.Contains(fs, f) {
			out = append(out, f)
		}
	}
	return out
}

// DebtRoutes returns the added and widened routes as a debt record names
// them (ambit.ledger.v1.DebtRoute), sorted by route.
func (d *Diff) DebtRoutes() []*ledgerv1.DebtRoute {
	out := make([]*ledgerv1.DebtRoute, 0, len(d.Added))
	for _, c := range d.Added {
		r := &ledgerv1.DebtRoute{Route: c.Route, Widened: c.Widened, Change: c.Detail}
		for _, f := range c.Families {
			r.FailureFamilies = append(r.FailureFamilies, string(f))
		}
		out = append(out, r)
	}
	return out
}

// RelaxedLimits returns the relaxed limits as a debt record names them,
// e.g. "action.max_amount: GBP 100.00 -> GBP 200.00".
func (d *Diff) RelaxedLimits() []string {
	out := make([]string, 0, len(d.Relaxed))
	for _, r := range d.Relaxed {
		out = append(out, r.String())
	}
	return out
}
