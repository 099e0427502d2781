package canon

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ambitkernel/ambit/kernel/reach"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

// Contraction debt (seed 002, coupling rule 4): a contract that widens a
// predecessor is promoted only once a CANONICAL debt record accepts the
// widening. The rule lives in the transitions, so replaying the log
// applies it exactly as it was applied.

// widening compares two contract items' reach.
func (s *State) widening(older, newer *record) (*reach.Diff, error) {
	oc, err := s.contract(older)
	if err != nil {
		return nil, err
	}
	nc, err := s.contract(newer)
	if err != nil {
		return nil, err
	}
	o, err := reach.Of(oc)
	if err != nil {
		return nil, fmt.Errorf("contract %q: %w", older.item.GetCanonItemId(), err)
	}
	n, err := reach.Of(nc)
	if err != nil {
		return nil, fmt.Errorf("contract %q: %w", newer.item.GetCanonItemId(), err)
	}
	return reach.Compare(o, n), nil
}

// predecessors lists the contracts a contract item would widen: the item
// it supersedes, once that was promoted, and every CANONICAL contract
// bound to the same task. A handoff child has none: its derivation can
// only shrink its parent, and it is bound to a task of its own.
func (s *State) predecessors(rec *record, auth Authorities) []*record {
	it := rec.item
	if it.GetHandoffParentRef() != "" {
		return nil
	}
	var out []*record
	if ref := it.GetSupersedesRef(); ref != "" {
		if r, ok := s.records[ref]; ok && r.item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT &&
			r.item.GetPromotionState() == ledgerv1.PromotionState_PROMOTION_STATE_APPROVED {
			out = append(out, r)
		}
	}
	for _, id := range s.refs.contracts[rec.task] {
		if id == it.GetCanonItemId() || id == it.GetSupersedesRef() {
			continue
		}
		if Classify(s, id, auth).Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
			out = append(out, s.records[id])
		}
	}
	return out
}

// checkDebtPaid refuses to promote a contract item that widens a
// predecessor without a CANONICAL debt record that accepts the widening.
func (s *State) checkDebtPaid(rec *record, auth Authorities) error {
	id := rec.item.GetCanonItemId()
	for _, prev := range s.predecessors(rec, auth) {
		prevID := prev.item.GetCanonItemId()
		d, err := s.widening(prev, rec)
		if err != nil {
			return fmt.Errorf("item %q: cannot compare its reach with %q: %v: %w", id, prevID, err, ErrInvalidItem)
		}
		if !d.Widens() {
			continue
		}
		if s.debtPaid(prevID, id, auth) {
			continue
		}
		return fmt.Errorf("item %q widens %q (added or widened routes: %d, relaxed limits: %d; families to re-run: %s) and no CANONICAL debt record accepts the widening: %w",
			id, prevID, len(d.Added), len(d.Relaxed), familyList(d.RerunFamilies()), ErrContractionDebtUnpaid)
	}
	return nil
}

// debtPaid reports whether a CANONICAL debt record accepts the widening of
// older by newer. Its routes were checked when it was proposed.
func (s *State) debtPaid(older, newer string, auth Authorities) bool {
	for _, id := range s.refs.debts[[2]string{older, newer}] {
		if s.records[id].item.GetDebt().GetDecision() != ledgerv1.AssuranceDecision_ASSURANCE_DECISION_ACCEPTED {
			continue
		}
		if Classify(s, id, auth).Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
			return true
		}
	}
	return false
}

// checkDebtRecord refuses a debt record that does not account for its
// widening exactly: both contracts must be in the ledger, the newer must
// widen the older, the record must name every route added or widened
// (with the families it newly carries) and every relaxed limit, and no
// other, must re-run every family the widening touches, and must carry
// the approver's decision. The numbers of the re-runs are the approver's
// evidence; the ledger does not recompute them.
func (s *State) checkDebtRecord(item *ledgerv1.CanonItem) error {
	id, rec := item.GetCanonItemId(), item.GetDebt()
	older, err := s.contractItem(rec.GetOldContractRef())
	if err != nil {
		return fmt.Errorf("debt record %q: old_contract_ref: %w", id, err)
	}
	newer, err := s.contractItem(rec.GetNewContractRef())
	if err != nil {
		return fmt.Errorf("debt record %q: new_contract_ref: %w", id, err)
	}
	switch {
	case older.item.GetCanonItemId() == newer.item.GetCanonItemId():
		return fmt.Errorf("debt record %q: old and new contract are both %q: %w", id, older.item.GetCanonItemId(), ErrInvalidItem)
	case ledgerv1.AssuranceDecision_name[int32(rec.GetDecision())] == "" || rec.GetDecision() == ledgerv1.AssuranceDecision_ASSURANCE_DECISION_UNSPECIFIED:
		return fmt.Errorf("debt record %q: no assurance decision: %w", id, ErrInvalidItem)
	}
	d, err := s.widening(older, newer)
	if err != nil {
		return fmt.Errorf("debt record %q: %v: %w", id, err, ErrInvalidItem)
	}
	oldID, newID := older.item.GetCanonItemId(), newer.item.GetCanonItemId()
	if !d.Widens() {
		return fmt.Errorf("debt record %q: %q does not widen %q: there is no debt to record: %w", id, newID, oldID, ErrInvalidItem)
	}
	if diff := routeDiff(rec.GetAddedRoutes(), d.DebtRoutes()); diff != "" {
		return fmt.Errorf("debt record %q: added_routes are not the routes %q adds to %q: %s: %w", id, newID, oldID, diff, ErrInvalidItem)
	}
	if diff := limitDiff(rec.GetRelaxedLimits(), d.RelaxedLimits()); diff != "" {
		return fmt.Errorf("debt record %q: relaxed_limits are not the limits %q relaxes: %s: %w", id, newID, diff, ErrInvalidItem)
	}
	var missing []string
	for _, f := range d.RerunFamilies() {
		if !slices.ContainsFunc(rec.GetReruns(), func(r *ledgerv1.FamilyRerun) bool { return r.GetFailureFamily() == string(f) }) {
			missing = append(missing, string(f))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("debt record %q: no re-run of the failure families %s: %w", id, strings.Join(missing, ", "), ErrInvalidItem)
	}
	return nil
}

func (s *State) contractItem(id string) (*record, error) {
	r, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	if r.item.GetKind() != ledgerv1.ItemKind_ITEM_KIND_CONTRACT {
		return nil, fmt.Errorf("item %q is a %s, not a contract: %w", id, r.item.GetKind(), ErrInvalidItem)
	}
	return r, nil
}

// routeDiff says how the routes a record names differ from the computed
// ones: by route, new or widened, and families; the human change text is
// not compared.
func routeDiff(named, computed []*ledgerv1.DebtRoute) string {
	key := func(r *ledgerv1.DebtRoute) string {
		what := "new"
		if r.GetWidened() {
			what = "widened"
		}
		if fs := r.GetFailureFamilies(); len(fs) > 0 {
			what += ", carrying " + strings.Join(fs, ", ")
		}
		return r.GetRoute() + " (" + what + ")"
	}
	return setDiff(mapKeys(named, key), mapKeys(computed, key))
}

// limitDiff compares relaxed limits by name ("action.max_amount").
func limitDiff(named, computed []string) string {
	name := func(s string) string { n, _, _ := strings.Cut(s, ":"); return n }
	return setDiff(mapKeys(named, name), mapKeys(computed, name))
}

func mapKeys[T any](in []T, key func(T) string) []string {
	out := make([]string, len(in))
	for i, x := range in {
		out[i] = key(x)
	}
	return out
}

// setDiff lists what got lacks and what it has too many of, "" when the
// two hold the same names.
func setDiff(got, want []string) string {
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		parts = append(parts, "not added "+strings.Join(extra, ", "))
	}
	return strings.Join(parts, "; ")
}

func familyList(fs []reach.Family) string {
	if len(fs) == 0 {
		return "none"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ", ")
}
