package reach_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/reach"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func profile(t *testing.T, name string, edits ...func(*contractv1.Contract)) *contractv1.Contract {
	t.Helper()
	c, err := contract.Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(c)
	}
	return c
}

// chain is the seed's profiles from widest to narrowest, each widening the
// next; irreversible-coupled stands beside the chain (see
// TestIrreversibleCoupledBesideTheChain).
func chain() []string {
	return slices.DeleteFunc(contract.ProfileNames(), func(n string) bool { return n == "irreversible-coupled" })
}

func inventory(t *testing.T, c *contractv1.Contract) *reach.Inventory {
	t.Helper()
	inv, err := reach.Of(c)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// TestShippedProfiles pins Ω and the route counts of the shipped profiles:
// each profile the seed lists as narrower has fewer routes and fewer
// failure families on them. irreversible-coupled binds a record, which
// confines the claim's fields to it, and adds the irreversible closing:
// one route more on A, none of field scope's pairs.
func TestShippedProfiles(t *testing.T) {
	type counts struct{ E, A, R, Pairs, Omega int }
	want := map[string]counts{
		"unrestricted":         {32, 4, 14, 79, 129},
		"action-only":          {32, 1, 14, 68, 115},
		"evidence-plus-action": {10, 1, 14, 27, 52},
		"coupled":              {10, 1, 4, 16, 31},
		"coupled-strict":       {10, 1, 4, 10, 25},
		"irreversible-coupled": {10, 2, 4, 5, 21},
	}
	prev := -1
	for _, name := range contract.ProfileNames() {
		inv := inventory(t, profile(t, name))
		got := counts{inv.ApertureRoutes(reach.ApertureEpistemic), inv.ApertureRoutes(reach.ApertureExecutive),
			inv.ApertureRoutes(reach.ApertureReflexive), inv.Pairs, inv.Omega}
		if diff := cmp.Diff(want[name], got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if inv.Omega != len(inv.Routes)+inv.Pairs {
			t.Errorf("%s: Ω %d is not routes %d + pairs %d", name, inv.Omega, len(inv.Routes), inv.Pairs)
		}
		if !slices.Contains(chain(), name) {
			continue
		}
		if prev >= 0 && inv.Omega >= prev {
			t.Errorf("%s: Ω %d is not below the wider profile's %d", name, inv.Omega, prev)
		}
		prev = inv.Omega
	}
}

// TestFamilies derives each failure family from the contract alone, and
// shows the coupling rule or narrowing that removes it.
func TestFamilies(t *testing.T) {
	untrusted := func(c *contractv1.Contract) {
		c.Evidence.Sources[0].Provenance = contractv1.Provenance_PROVENANCE_UNTRUSTED
	}
	tests := []struct {
		name  string
		edits []func(*contractv1.Contract)
		route string
		want  []reach.Family // nil: the route does not exist
	}{
		{"trusted raw field, unconfined", nil, "E claims_db.claim_id", []reach.Family{reach.FieldScope}},
		{"raw field of the bound record", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Binding.Record = &contractv1.RecordRef{Source: "claims_db", Key: "C-1"}
		}}, "E claims_db.claim_id", []reach.Family{}},
		{"raw field linked to the bound record", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Binding.Record = &contractv1.RecordRef{Source: "claims_db", Key: "C-1"}
			c.Evidence.Sources[1].RecordField = "claim_id"
			c.Evidence.Sources[1].Provenance = contractv1.Provenance_PROVENANCE_TRUSTED
		}}, "E receipt_upload.claim_id", []reach.Family{}},
		{"any subject", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Binding.Subject = "*"
			c.Binding.Record = &contractv1.RecordRef{Source: "claims_db", Key: "C-1"}
		}}, "E claims_db.claim_id", []reach.Family{reach.FieldScope}},
		{"untrusted raw field", []func(*contractv1.Contract){untrusted}, "E claims_db.claim_id", []reach.Family{reach.Provenance, reach.FieldScope}},
		{"untrusted raw field under rule 1", []func(*contractv1.Contract){untrusted, func(c *contractv1.Contract) {
			c.Coupling = &contractv1.Coupling{RequireTrustedCorroboration: true}
		}}, "E claims_db.claim_id", []reach.Family{reach.FieldScope}},
		{"untrusted derived field", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Evidence.Sources[1].Derived = []*contractv1.DerivedField{{Name: "total_ok", Expression: "record.receipt_total <= 100"}}
		}}, "E receipt_upload.total_ok", []reach.Family{reach.Provenance}},
		{"untrusted quarantined field", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Evidence.Sources[1].Quarantined = []string{"note"}
		}}, "E receipt_upload.note", []reach.Family{}},
		{"untrusted support reaches the effect", nil, "A refund -> claimant", []reach.Family{reach.Provenance}},
		{"only quarantined untrusted content", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Evidence.Sources[1].Quarantined = []string{"note"}
		}}, "A refund -> claimant", []reach.Family{}},
		{"any state, rule 3 off", []func(*contractv1.Contract){func(c *contractv1.Contract) { c.Binding.StateVersion = "*" }},
			"A refund -> claimant", []reach.Family{reach.Provenance, reach.StateFreshness}},
		{"any state, rule 3 on", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Binding.StateVersion = "*"
			c.Coupling = &contractv1.Coupling{RevokeOnStateChange: true}
		}}, "A refund -> claimant", []reach.Family{reach.Provenance}},
		{"constant-true destination", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Action.Tools[0].Destinations[0].When = "true"
		}}, "A refund -> claimant", []reach.Family{reach.Provenance, reach.Destination}},
		{"several actions, no cumulative cap", []func(*contractv1.Contract){func(c *contractv1.Contract) { c.Action.MaxActions = 2 }},
			"A refund -> claimant", []reach.Family{reach.Provenance, reach.CumulativeAmount}},
		{"several actions, a cumulative cap", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Action.MaxActions = 2
			c.Action.MaxCumulativeAmount = &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 10000}
		}}, "A refund -> claimant", []reach.Family{reach.Provenance}},
		{"no action at all", []func(*contractv1.Contract){func(c *contractv1.Contract) { c.Action.MaxActions = 0 }}, "A refund -> claimant", nil},
		{"irreversible, not allowed", []func(*contractv1.Contract){func(c *contractv1.Contract) { c.Action.Tools[0].Irreversible = true }},
			"A refund -> claimant", nil},
		{"irreversible without rule 2", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Action.Tools[0].Irreversible = true
			c.Action.AllowIrreversible = true
			c.Coupling = &contractv1.Coupling{RequireTrustedCorroboration: true, IrreversibleRequiresApproval: true}
		}}, "A refund -> claimant", []reach.Family{reach.Irreversibility}},
		{"irreversible under rule 2", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Action.Tools[0].Irreversible = true
			c.Action.AllowIrreversible = true
			c.Coupling = &contractv1.Coupling{RequireTrustedCorroboration: true, IrreversibleRequiresApproval: true, IrreversibleMaxEvidenceAgeSeconds: 900}
		}}, "A refund -> claimant", []reach.Family{}},
		{"operational self-fact", nil, "R read capabilities", []reach.Family{}},
		{"secret self-fact", []func(*contractv1.Contract){func(c *contractv1.Contract) { c.Reflexive.VisibleFacts = []string{"credentials"} }},
			"R read credentials", []reach.Family{reach.SelfQuery}},
		{"mutable self-fact", []func(*contractv1.Contract){func(c *contractv1.Contract) { c.Reflexive.MutableFacts = []string{"expiry"} }},
			"R change expiry", []reach.Family{reach.ContractMutation}},
		{"mutable self-fact under rule 4", []func(*contractv1.Contract){func(c *contractv1.Contract) {
			c.Reflexive.MutableFacts = []string{"expiry"}
			c.Coupling = &contractv1.Coupling{ForbidSelfMutation: true}
		}}, "R change expiry", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := inventory(t, profile(t, "coupled", tt.edits...))
			r, ok := inv.Route(tt.route)
			if tt.want == nil {
				if ok {
					t.Fatalf("route %s exists, carrying %v", tt.route, r.Families)
				}
				return
			}
			if !ok {
				t.Fatalf("no route %s", tt.route)
			}
			if diff := cmp.Diff(tt.want, r.Families); diff != "" {
				t.Errorf("families (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComponents(t *testing.T) {
	inv := inventory(t, profile(t, "unrestricted"))
	want := map[string]string{reach.ApertureEpistemic: reach.EvidenceAdapter, reach.ApertureExecutive: reach.ActionAdapter, reach.ApertureReflexive: reach.Kernel}
	for _, r := range inv.Routes {
		if r.Component != want[r.Aperture] {
			t.Errorf("%s is granted by %q", r.Key, r.Component)
		}
	}
}

// TestCompare: what a newer contract adds, widens and relaxes, and
// nothing for a narrowing.
func TestCompare(t *testing.T) {
	base := profile(t, "coupled")
	tests := []struct {
		name        string
		edit        func(*contractv1.Contract)
		wantAdded   []string // route: detail ("new" for a new route)
		wantRelaxed []string
		wantRerun   []reach.Family
	}{
		{"identical", func(*contractv1.Contract) {}, nil, nil, nil},
		{"narrower", func(c *contractv1.Contract) {
			c.Evidence.Sources = c.Evidence.Sources[:1]
			c.Action.MaxAmount.MinorUnits = 5000
			c.Coupling = &contractv1.Coupling{ForbidSelfMutation: true}
		}, nil, nil, nil},
		{"a field", func(c *contractv1.Contract) { c.Evidence.Fields = append(c.Evidence.Fields, "salary") },
			[]string{"E claims_db.salary: new", "E receipt_upload.salary: new"}, nil, []reach.Family{reach.Provenance, reach.FieldScope}},
		{"a less trusted source", func(c *contractv1.Contract) {
			c.Evidence.Sources[0].Provenance = contractv1.Provenance_PROVENANCE_UNTRUSTED
		},
			[]string{
				"E claims_db.claim_id: carries provenance; provenance TRUSTED -> UNTRUSTED",
				"E claims_db.claimant_id: carries provenance; provenance TRUSTED -> UNTRUSTED",
				"E claims_db.cost_centre: carries provenance; provenance TRUSTED -> UNTRUSTED",
				"E claims_db.receipt_date: carries provenance; provenance TRUSTED -> UNTRUSTED",
				"E claims_db.receipt_total: carries provenance; provenance TRUSTED -> UNTRUSTED",
			}, nil, []reach.Family{reach.Provenance}},
		{"a destination condition", func(c *contractv1.Contract) { c.Action.Tools[0].Destinations[0].When = "true" },
			[]string{`A refund -> claimant: carries destination; condition "args.payee_id == record.claimant_id" -> "true"`}, nil, []reach.Family{reach.Destination}},
		{"a destination class", func(c *contractv1.Contract) {
			c.Action.Tools[0].Destinations = append(c.Action.Tools[0].Destinations, &contractv1.DestinationClass{Name: "finance", When: "args.payee_id == 'finance'"})
		}, []string{"A refund -> finance: new"}, nil, []reach.Family{reach.Provenance, reach.Destination}},
		{"a tool made irreversible", func(c *contractv1.Contract) {
			c.Action.Tools[0].Irreversible = true
			c.Action.AllowIrreversible = true
		}, []string{"A refund -> claimant: carries irreversibility; irreversible"}, []string{"action.allow_irreversible: false -> true"}, []reach.Family{reach.Irreversibility}},
		{"a constraint dropped", nil, nil, nil, nil}, // filled below
		{"limits", func(c *contractv1.Contract) {
			c.Binding.Subject = "*"
			c.Binding.StateVersion = "*"
			c.Binding.ValidUntil = timestamppb.New(c.Binding.ValidUntil.AsTime().Add(time.Hour))
			c.Evidence.MaxAgeSeconds++
			c.Action.MaxAmount.MinorUnits++
			c.Action.ApprovalOver.MinorUnits++
			c.Action.MaxActions++
		}, []string{"A refund -> claimant: carries state freshness; carries cumulative amount"}, []string{
			"binding.subject: employee-7 -> *",
			"binding.state_version: claims-v42 -> *",
			"binding.valid_until: 2030-01-01T04:00:00Z -> 2030-01-01T05:00:00Z",
			"evidence.max_age_seconds: 86400 -> 86401",
			"action.max_amount: GBP 100.00 -> GBP 100.01",
			"action.approval_over: GBP 50.00 -> GBP 50.01",
			"action.max_actions: 1 -> 2",
		}, []reach.Family{reach.FieldScope, reach.StateFreshness, reach.Destination, reach.CumulativeAmount}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			older, newer := proto.CloneOf(base), proto.CloneOf(base)
			if tt.edit == nil {
				// A constraint the older contract declares, dropped.
				older.Action.Tools[0].Constraints = []*contractv1.Constraint{{Code: "REASON_GIVEN", Expression: "has(args.reason_code)"}}
				tt.wantAdded = []string{"A refund -> claimant: constraint REASON_GIVEN removed"}
				tt.wantRerun = []reach.Family{reach.Destination}
			} else {
				tt.edit(newer)
			}
			d := reach.Compare(inventory(t, older), inventory(t, newer))
			var added, relaxed []string
			for _, c := range d.Added {
				detail := "new"
				if c.Widened {
					detail = c.Detail
				}
				added = append(added, c.Route+": "+detail)
			}
			for _, r := range d.Relaxed {
				relaxed = append(relaxed, r.String())
			}
			if diff := cmp.Diff(tt.wantAdded, added); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRelaxed, relaxed); diff != "" {
				t.Errorf("relaxed (-want +got):\n%s", diff)
			}
			if got := d.RerunFamilies(); !slices.Equal(tt.wantRerun, got) {
				t.Errorf("rerun families = %v, want %v", got, tt.wantRerun)
			}
			if d.Widens() != (len(tt.wantAdded)+len(tt.wantRelaxed) > 0) {
				t.Errorf("Widens() = %v", d.Widens())
			}
			if len(d.DebtRoutes()) != len(d.Added) || len(d.RelaxedLimits()) != len(d.Relaxed) {
				t.Errorf("record form: %d routes, %d limits", len(d.DebtRoutes()), len(d.RelaxedLimits()))
			}
		})
	}
}

// TestCompareProfiles: every profile of the seed's chain widens the one the
// seed lists after it, and never the other way round.
func TestCompareProfiles(t *testing.T) {
	names := chain()
	for i := 0; i+1 < len(names); i++ {
		wider, narrower := inventory(t, profile(t, names[i])), inventory(t, profile(t, names[i+1]))
		if d := reach.Compare(narrower, wider); !d.Widens() {
			t.Errorf("%s does not widen %s", names[i], names[i+1])
		}
		if d := reach.Compare(wider, narrower); d.Widens() {
			t.Errorf("%s widens %s: %v %v", names[i+1], names[i], d.Added, d.Relaxed)
		}
	}
}

// TestIrreversibleCoupledBesideTheChain: irreversible-coupled and
// coupled-strict each widen the other, so neither is promoted over the
// other without a debt record: irreversible-coupled adds the closing (an
// irreversible route that carries no failure family, rule 2 being on),
// coupled-strict releases the claim's fields unconfined.
func TestIrreversibleCoupledBesideTheChain(t *testing.T) {
	strict, rule2 := inventory(t, profile(t, "coupled-strict")), inventory(t, profile(t, "irreversible-coupled"))
	d := reach.Compare(strict, rule2)
	var added []string
	for _, c := range d.Added {
		added = append(added, c.Route)
	}
	if diff := cmp.Diff([]string{"A close_claim -> own_claim"}, added); diff != "" {
		t.Errorf("irreversible-coupled over coupled-strict adds (-want +got):\n%s", diff)
	}
	for _, r := range rule2.Routes {
		if r.Irreversible && len(r.Families) > 0 {
			t.Errorf("%s carries %v under rule 2", r.Key, r.Families)
		}
	}
	if back := reach.Compare(rule2, strict); !back.Widens() {
		t.Error("coupled-strict does not widen irreversible-coupled: the bound record confines nothing")
	}
}
