package canon

import (
	"fmt"
	"slices"
	"strings"
	"time"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// State is the ledger as the fold of its accepted transitions. The zero
// value is an empty ledger. Apply either records a transition in full or
// refuses it and leaves the state unchanged.
//
// State stores facts (what was proposed, by whom, which transitions
// happened), never a class: Classify computes classes from these facts and
// the Authorities in force.
type State struct {
	order   []string
	records map[string]*record
	log     []Transition
	last    time.Time
	// refs indexes who refers to an item, so that a transition finds the
	// items it affects without a scan of the ledger.
	refs refs
	// tools are the distinct tool grants of the recorded contracts, by
	// their deterministic encoding (see intern).
	tools map[string]*contractv1.ToolGrant
	// compacted is how many items of order Compact has visited; content
	// loads what compacted contract items no longer hold (see Compact).
	compacted int
	content   ContentFunc
}

// refs are the ledger's references, indexed by the item referred to. Each
// list is in the order its items were first recorded.
type refs struct {
	// children are the handoff children of a parent.
	children map[string][]string
	// challengers are the items that were proposed with an unresolved
	// conflict against an item.
	challengers map[string][]string
	// citing are the items whose provenance_ref is "item:<id>", recorded
	// whether or not the cited item exists yet.
	citing map[string][]string
	// contracts are the contract items bound to a task, handoff children
	// aside.
	contracts map[string][]string
	// debts are the debt records of an (old, new) contract pair.
	debts map[[2]string][]string
	// requests are the boundary-change requests of one provenance_ref
	// (an agent's, for one task).
	requests map[string][]string
}

// add indexes item's references; task is the task its contract is bound
// to (see record.task).
func (x *refs) add(item *ledgerv1.CanonItem, task string) {
	id := item.GetCanonItemId()
	push := func(m *map[string][]string, key string) {
		if *m == nil {
			*m = make(map[string][]string)
		}
		(*m)[key] = append((*m)[key], id)
	}
	if p := item.GetHandoffParentRef(); p != "" {
		push(&x.children, p)
	}
	if c := item.GetConflictsWith(); c != "" {
		push(&x.challengers, c)
	}
	if cited, ok := strings.CutPrefix(item.GetProvenanceRef(), "item:"); ok {
		push(&x.citing, cited)
	}
	if item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT && item.GetHandoffParentRef() == "" {
		push(&x.contracts, task)
	}
	if item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_BOUNDARY_REQUEST {
		push(&x.requests, item.GetProvenanceRef())
	}
	if item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD {
		key := [2]string{item.GetDebt().GetOldContractRef(), item.GetDebt().GetNewContractRef()}
		if x.debts == nil {
			x.debts = make(map[[2]string][]string)
		}
		x.debts[key] = append(x.debts[key], id)
	}
}

// record is what the ledger knows about one item.
type record struct {
	// item is the item as it now stands: the proposal plus the fields that
	// transitions set (promotion_state, promotion_authority,
	// conflict_state). It is never modified once stored: a transition
	// stores a changed copy, so that a reader may keep it.
	item       *ledgerv1.CanonItem
	proposer   string
	recordedAt time.Time
	// filter is the declared handoff filter of a derived item.
	filter       *ledgerv1.HandoffFilter
	rejectedBy   string
	resolvedBy   string
	supersededBy string
	supersededAt time.Time
	// task is the task a contract item's binding names, kept apart from
	// the contract so that it survives compaction.
	task string
	// place is the item's position in the order first recorded, so that a
	// page begins after an item without a search of the order.
	place int
}

// Apply records t, or refuses it with an error that wraps one of the
// package's sentinels (see Code) and leaves s unchanged. auth decides who
// may promote, reject, supersede and resolve, and who may claim authority
// for a proposed item.
func (s *State) Apply(t Transition, auth Authorities) error {
	if err := s.apply(t, auth); err != nil {
		return fmt.Errorf("%s at %s: %w", t.Kind, t.At.UTC().Format(time.RFC3339), err)
	}
	if t.Kind == Propose {
		// The log keeps the proposal as given, sharing the recorded item's
		// contract or debt record, equal to the proposal's, instead of a
		// second deep copy of them.
		rec := s.records[t.Item.GetCanonItemId()].item
		t.Item = shallow(t.Item)
		if rec.GetContract() != nil || t.Item.GetContract() == nil {
			t.Item.Contract, t.Item.Debt = rec.GetContract(), rec.GetDebt()
		} else {
			// A repeated proposal of a compacted item: the log keeps
			// its own copy of the content.
			t.Item.Contract = proto.CloneOf(t.Item.GetContract())
		}
	} else {
		t.Item = proto.CloneOf(t.Item)
	}
	t.Filter = proto.CloneOf(t.Filter)
	s.log = append(s.log, t)
	s.last = t.At
	return nil
}

func (s *State) apply(t Transition, auth Authorities) error {
	switch {
	case t.At.IsZero():
		return fmt.Errorf("no time: %w", ErrInvalidTransition)
	case t.At.Before(s.last):
		return fmt.Errorf("earlier than the last transition (%s): %w", s.last.UTC().Format(time.RFC3339), ErrInvalidTransition)
	case t.Actor == "":
		return fmt.Errorf("no actor: %w", ErrInvalidTransition)
	}
	if err := checkShape(t); err != nil {
		return err
	}
	switch t.Kind {
	case Propose:
		return s.propose(t, auth)
	case DeriveHandoff:
		return s.deriveHandoff(t, auth)
	case Promote:
		return s.promote(t, auth)
	case Reject:
		return s.reject(t, auth)
	case Supersede:
		return s.supersede(t, auth)
	case ResolveConflict:
		return s.resolveConflict(t, auth)
	}
	return fmt.Errorf("kind %d: %w", int(t.Kind), ErrInvalidTransition)
}

// checkShape refuses fields a kind does not use, so that a transition
// never carries data that looks meaningful but is ignored.
func checkShape(t Transition) error {
	var extra []string
	if t.Item != nil && t.Kind != Propose && t.Kind != DeriveHandoff {
		extra = append(extra, "item")
	}
	if t.ItemID != "" && t.Kind == Propose {
		extra = append(extra, "item_id")
	}
	if t.OtherID != "" && t.Kind != Supersede {
		extra = append(extra, "other_id")
	}
	if t.Filter != nil && t.Kind != DeriveHandoff {
		extra = append(extra, "filter")
	}
	if len(extra) > 0 {
		return fmt.Errorf("%s does not use %v: %w", t.Kind, extra, ErrInvalidTransition)
	}
	return nil
}

func (s *State) propose(t Transition, auth Authorities) error {
	if err := checkProposal(t.Item); err != nil {
		return err
	}
	if t.Item.GetHandoffParentRef() != "" || t.Item.GetHandoffFilterDeclared() {
		return fmt.Errorf("item %q: handoff fields are set only by a handoff derivation: %w", t.Item.GetCanonItemId(), ErrForgedDecision)
	}
	if _, again := s.records[t.Item.GetCanonItemId()]; !again && t.Item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD {
		// A repeated proposal is the identity rule's to judge (a no-op or a
		// reuse), not the debt rule's.
		if err := s.checkDebtRecord(t.Item); err != nil {
			return err
		}
	}
	item := proto.CloneOf(t.Item)
	if err := s.record(t, item, nil, auth); err != nil {
		return err
	}
	s.intern(item)
	return nil
}

// intern makes a recorded contract share the tool grants an earlier one
// holds. Contracts bound to many tasks repeat the same tools, whose input
// schemas are most of a contract's memory; stored items are never
// modified, so sharing equal grants is safe. Only grants of recorded items
// are kept, so a refused proposal leaves nothing behind.
func (s *State) intern(item *ledgerv1.CanonItem) {
	tools := item.GetContract().GetAction().GetTools()
	for i, g := range tools {
		key, err := proto.MarshalOptions{Deterministic: true}.Marshal(g)
		if err != nil {
			continue
		}
		if prev, ok := s.tools[string(key)]; ok {
			tools[i] = prev
			continue
		}
		if s.tools == nil {
			s.tools = make(map[string]*contractv1.ToolGrant)
		}
		s.tools[string(key)] = g
	}
}

func (s *State) deriveHandoff(t Transition, auth Authorities) error {
	parent, err := s.lookup(t.ItemID)
	if err != nil {
		return fmt.Errorf("handoff parent: %w", err)
	}
	switch {
	case parent.item.GetKind() != ledgerv1.ItemKind_ITEM_KIND_CONTRACT:
		return fmt.Errorf("handoff parent %q is a %s, not a contract: %w", t.ItemID, parent.item.GetKind(), ErrInvalidTransition)
	case parent.supersededBy != "":
		// A child of replaced canon would carry reach the owner withdrew.
		return fmt.Errorf("handoff parent %q was superseded by %q: %w", t.ItemID, parent.supersededBy, ErrSuperseded)
	}
	tmpl := t.Item
	if tmpl == nil {
		return fmt.Errorf("no child item: %w", ErrInvalidItem)
	}
	id := tmpl.GetCanonItemId()
	switch {
	case tmpl.GetKind() != ledgerv1.ItemKind_ITEM_KIND_UNSPECIFIED && tmpl.GetKind() != ledgerv1.ItemKind_ITEM_KIND_CONTRACT:
		return fmt.Errorf("child %q: a handoff derives a contract, not a %s: %w", id, tmpl.GetKind(), ErrInvalidItem)
	case tmpl.GetContract() != nil || tmpl.GetText() != "":
		// The child's content is computed from the parent and the filter,
		// never declared, so it cannot exceed what the filter allows.
		return fmt.Errorf("child %q: content is derived, not declared: %w", id, ErrInvalidItem)
	case tmpl.GetHandoffParentRef() != "" || tmpl.GetHandoffFilterDeclared():
		return fmt.Errorf("child %q: handoff fields are set by the derivation: %w", id, ErrForgedDecision)
	}
	child := proto.CloneOf(tmpl)
	child.Kind = ledgerv1.ItemKind_ITEM_KIND_CONTRACT
	pc, err := s.contract(parent)
	if err != nil {
		return fmt.Errorf("handoff parent: %w", err)
	}
	c, err := Intersect(pc, t.Filter)
	if err != nil {
		return fmt.Errorf("child %q: %w", id, err)
	}
	child.Contract = c
	child.HandoffParentRef = t.ItemID
	child.HandoffFilterDeclared = t.Filter != nil
	if err := checkProposal(child); err != nil {
		return err
	}
	return s.record(t, child, t.Filter, auth)
}

// checkProposal refuses a malformed proposal and one that carries a
// decision: only transitions approve, reject or resolve.
func checkProposal(item *ledgerv1.CanonItem) error {
	if item == nil {
		return fmt.Errorf("no item: %w", ErrInvalidItem)
	}
	id := item.GetCanonItemId()
	if id == "" {
		return fmt.Errorf("item has no canon_item_id: %w", ErrInvalidItem)
	}
	if err := checkContent(item); err != nil {
		return err
	}
	if err := checkEnums(item); err != nil {
		return err
	}
	switch ps := item.GetPromotionState(); {
	case ps != ledgerv1.PromotionState_PROMOTION_STATE_UNSPECIFIED && ps != ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED:
		return fmt.Errorf("item %q: promotion_state %s: a proposal is not a promotion event: %w", id, ps, ErrForgedDecision)
	case item.GetPromotionAuthority() != "":
		return fmt.Errorf("item %q: promotion_authority %q: a proposal is not a promotion event: %w", id, item.GetPromotionAuthority(), ErrForgedDecision)
	case item.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_RESOLVED:
		return fmt.Errorf("item %q: conflict_state RESOLVED: only an authorised owner's resolution resolves: %w", id, ErrForgedDecision)
	case item.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED && item.GetConflictsWith() == "":
		return fmt.Errorf("item %q: an unresolved conflict names no conflicts_with: %w", id, ErrInvalidItem)
	case item.GetConflictsWith() != "" && item.GetConflictState() != ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED:
		return fmt.Errorf("item %q: conflicts_with %q but conflict_state %s: %w", id, item.GetConflictsWith(), item.GetConflictState(), ErrInvalidItem)
	case item.GetConflictsWith() == id:
		return fmt.Errorf("item %q conflicts with itself: %w", id, ErrInvalidItem)
	case item.GetSupersedesRef() == id:
		return fmt.Errorf("item %q supersedes itself: %w", id, ErrInvalidItem)
	}
	return nil
}

// checkEnums refuses enum numbers outside their definitions, which protojson
// would reject but a Go caller can construct.
func checkEnums(item *ledgerv1.CanonItem) error {
	bad := func(field string, n int32, names map[int32]string) error {
		if _, ok := names[n]; ok {
			return nil
		}
		return fmt.Errorf("item %q: %s %d is not defined: %w", item.GetCanonItemId(), field, n, ErrInvalidItem)
	}
	for _, err := range []error{
		bad("source_origin", int32(item.GetSourceOrigin()), ledgerv1.SourceOrigin_name),
		bad("authority_level", int32(item.GetAuthorityLevel()), ledgerv1.AuthorityLevel_name),
		bad("scope", int32(item.GetScope()), ledgerv1.Scope_name),
		bad("lifetime", int32(item.GetLifetime()), ledgerv1.Lifetime_name),
		bad("promotion_state", int32(item.GetPromotionState()), ledgerv1.PromotionState_name),
		bad("conflict_state", int32(item.GetConflictState()), ledgerv1.ConflictState_name),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// record is the common tail of Propose and DeriveHandoff: hash, identity,
// references and authority claims, then the write.
func (s *State) record(t Transition, item *ledgerv1.CanonItem, filter *ledgerv1.HandoffFilter, auth Authorities) error {
	id := item.GetCanonItemId()
	sum, err := ContentHash(item)
	if err != nil {
		return err
	}
	if declared := item.GetContentHash(); declared != "" && declared != sum {
		return fmt.Errorf("item %q: declared content_hash %s, content hashes to %s: %w", id, declared, sum, ErrHashMismatch)
	}
	item.ContentHash = sum
	item.PromotionState = ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED
	if item.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_UNSPECIFIED {
		item.ConflictState = ledgerv1.ConflictState_CONFLICT_STATE_NONE
	}

	if prev, ok := s.records[id]; ok {
		switch {
		case prev.item.GetContentHash() != sum:
			return fmt.Errorf("item %q: content hash %s differs from the recorded %s; changed content needs a new identity: %w",
				id, sum, prev.item.GetContentHash(), ErrIdentityReuse)
		case !proto.Equal(prev.proposal(), withoutContentIf(item, prev.item.GetContract() == nil)):
			return fmt.Errorf("item %q: same content, different metadata; a changed item needs a new identity or a transition: %w", id, ErrIdentityReuse)
		}
		// The same item again: idempotent, so replaying a log twice or
		// retrying a proposal changes nothing.
		return nil
	}

	if ref := item.GetSupersedesRef(); ref != "" {
		if _, err := s.lookup(ref); err != nil {
			return fmt.Errorf("item %q: supersedes_ref: %w", id, err)
		}
	}
	if ref := item.GetConflictsWith(); ref != "" {
		if _, err := s.lookup(ref); err != nil {
			return fmt.Errorf("item %q: conflicts_with: %w", id, err)
		}
	}
	if claimsAuthority(item) && !auth.Allows(item.GetScope(), t.Actor) {
		// Origin is not authority: only a principal who holds authority at
		// the scope can record that an item carries it.
		return fmt.Errorf("item %q: %s claimed by %q, who holds no authority for %s: %w",
			id, item.GetAuthorityLevel(), t.Actor, item.GetScope(), ErrNotAuthorised)
	}

	if s.records == nil {
		s.records = make(map[string]*record)
	}
	rec := &record{
		item:       item,
		proposer:   t.Actor,
		recordedAt: t.At,
		filter:     proto.CloneOf(filter),
		place:      len(s.order),
	}
	if item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT && item.GetHandoffParentRef() == "" {
		rec.task = item.GetContract().GetBinding().GetTaskId()
	}
	s.records[id] = rec
	s.order = append(s.order, id)
	s.refs.add(item, rec.task)
	return nil
}

// proposal is the item exactly as first recorded, against which a
// repeated proposal is compared: a proposal carries no decision, so the
// fields transitions set go back to what record stored.
func (r *record) proposal() *ledgerv1.CanonItem {
	p := proto.CloneOf(r.item)
	p.PromotionState = ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED
	p.PromotionAuthority = ""
	if p.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_RESOLVED {
		p.ConflictState = ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED
	}
	return p
}

// change stores a copy of r's item changed by edit: stored items are never
// modified, so that a reader holding one sees a consistent item.
func (r *record) change(edit func(*ledgerv1.CanonItem)) {
	it := shallow(r.item)
	edit(it)
	r.item = it
}

// shallow returns a copy of item that shares its parts (the contract, the
// debt record). A stored item and its parts are never modified, so sharing
// them is safe, and it spares a deep copy of a contract per transition.
func shallow(item *ledgerv1.CanonItem) *ledgerv1.CanonItem {
	src := item.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	dst.SetUnknown(src.GetUnknown())
	return dst.Interface().(*ledgerv1.CanonItem)
}

func claimsAuthority(item *ledgerv1.CanonItem) bool {
	switch item.GetAuthorityLevel() {
	case ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER, ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_DELEGATED:
		return true
	}
	return false
}

func (s *State) promote(t Transition, auth Authorities) error {
	r, err := s.lookup(t.ItemID)
	if err != nil {
		return err
	}
	it := r.item
	switch {
	case r.supersededBy != "":
		return fmt.Errorf("item %q was superseded by %q: %w", t.ItemID, r.supersededBy, ErrSuperseded)
	case it.GetPromotionState() == ledgerv1.PromotionState_PROMOTION_STATE_REJECTED:
		return fmt.Errorf("item %q was rejected by %q; propose a new item: %w", t.ItemID, r.rejectedBy, ErrInvalidTransition)
	case it.GetSourceOrigin() == ledgerv1.SourceOrigin_SOURCE_ORIGIN_AGENT && t.Actor == r.proposer:
		// Checked before authority: an agent never promotes its own output,
		// whatever Authorities say.
		return fmt.Errorf("item %q: agent output promoted by its own proposer %q: %w", t.ItemID, t.Actor, ErrSelfPromotion)
	case !auth.Allows(it.GetScope(), t.Actor):
		return fmt.Errorf("item %q: actor %q holds no promotion authority for %s: %w", t.ItemID, t.Actor, it.GetScope(), ErrNotAuthorised)
	case it.GetProvenanceRef() == "":
		return fmt.Errorf("item %q: no provenance_ref to review: %w", t.ItemID, ErrMissingProvenance)
	case s.unresolvable(it) != "":
		return fmt.Errorf("item %q: %s: %w", t.ItemID, s.unresolvable(it), ErrMissingProvenance)
	case it.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED:
		return fmt.Errorf("item %q conflicts with %q: %w", t.ItemID, it.GetConflictsWith(), ErrUnresolvedConflict)
	case it.GetPromotionState() == ledgerv1.PromotionState_PROMOTION_STATE_APPROVED:
		return nil // already approved: idempotent; the first approver stays on record
	}
	if it.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT {
		if err := s.checkDebtPaid(r, auth); err != nil {
			return err
		}
	}
	r.change(func(it *ledgerv1.CanonItem) {
		it.PromotionState = ledgerv1.PromotionState_PROMOTION_STATE_APPROVED
		it.PromotionAuthority = t.Actor
	})
	return nil
}

func (s *State) reject(t Transition, auth Authorities) error {
	r, err := s.lookup(t.ItemID)
	if err != nil {
		return err
	}
	it := r.item
	switch {
	case r.supersededBy != "":
		return fmt.Errorf("item %q was superseded by %q: %w", t.ItemID, r.supersededBy, ErrSuperseded)
	case !auth.Allows(it.GetScope(), t.Actor):
		return fmt.Errorf("item %q: actor %q holds no promotion authority for %s: %w", t.ItemID, t.Actor, it.GetScope(), ErrNotAuthorised)
	case it.GetPromotionState() == ledgerv1.PromotionState_PROMOTION_STATE_APPROVED:
		// Approved canon is replaced by supersession, which keeps it for
		// replay, never withdrawn in place.
		return fmt.Errorf("item %q is approved; supersede it instead: %w", t.ItemID, ErrInvalidTransition)
	case it.GetPromotionState() == ledgerv1.PromotionState_PROMOTION_STATE_REJECTED:
		return nil // already rejected: idempotent
	}
	r.change(func(it *ledgerv1.CanonItem) { it.PromotionState = ledgerv1.PromotionState_PROMOTION_STATE_REJECTED })
	r.rejectedBy = t.Actor
	return nil
}

func (s *State) supersede(t Transition, auth Authorities) error {
	old, err := s.lookup(t.ItemID)
	if err != nil {
		return fmt.Errorf("old item: %w", err)
	}
	nu, err := s.lookup(t.OtherID)
	if err != nil {
		return fmt.Errorf("new item: %w", err)
	}
	switch {
	case t.ItemID == t.OtherID:
		return fmt.Errorf("item %q cannot supersede itself: %w", t.ItemID, ErrInvalidTransition)
	case old.supersededBy != "":
		return fmt.Errorf("item %q was already superseded by %q: %w", t.ItemID, old.supersededBy, ErrSuperseded)
	case nu.supersededBy != "":
		return fmt.Errorf("new item %q was itself superseded by %q: %w", t.OtherID, nu.supersededBy, ErrSuperseded)
	case nu.item.GetSupersedesRef() != t.ItemID:
		// Supersession is explicit on both sides: the new item names what it
		// replaces, and the transition records that an owner accepted it.
		return fmt.Errorf("new item %q has supersedes_ref %q, not %q: %w", t.OtherID, nu.item.GetSupersedesRef(), t.ItemID, ErrInvalidTransition)
	case !auth.Allows(old.item.GetScope(), t.Actor):
		return fmt.Errorf("item %q: actor %q holds no promotion authority for %s: %w", t.ItemID, t.Actor, old.item.GetScope(), ErrNotAuthorised)
	case !auth.Allows(nu.item.GetScope(), t.Actor):
		return fmt.Errorf("item %q: actor %q holds no promotion authority for %s: %w", t.OtherID, t.Actor, nu.item.GetScope(), ErrNotAuthorised)
	}
	old.supersededBy = t.OtherID
	old.supersededAt = t.At
	return nil
}

func (s *State) resolveConflict(t Transition, auth Authorities) error {
	r, err := s.lookup(t.ItemID)
	if err != nil {
		return err
	}
	it := r.item
	if r.supersededBy != "" {
		return fmt.Errorf("item %q was superseded by %q: %w", t.ItemID, r.supersededBy, ErrSuperseded)
	}
	if it.GetConflictState() != ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED {
		return fmt.Errorf("item %q has no unresolved conflict (%s): %w", t.ItemID, it.GetConflictState(), ErrInvalidTransition)
	}
	// An owner of the contested content resolves, never the challenger: a
	// party that settles its own disagreement has hidden it, not resolved it.
	if t.Actor == r.proposer {
		return fmt.Errorf("item %q: its proposer %q cannot resolve its own conflict: %w", t.ItemID, t.Actor, ErrSelfPromotion)
	}
	target := s.records[it.GetConflictsWith()]
	if !auth.Allows(target.item.GetScope(), t.Actor) {
		return fmt.Errorf("item %q: actor %q holds no authority over %q at %s: %w",
			t.ItemID, t.Actor, it.GetConflictsWith(), target.item.GetScope(), ErrNotAuthorised)
	}
	r.change(func(it *ledgerv1.CanonItem) { it.ConflictState = ledgerv1.ConflictState_CONFLICT_STATE_RESOLVED })
	r.resolvedBy = t.Actor
	return nil
}

func (s *State) lookup(id string) (*record, error) {
	if id == "" {
		return nil, fmt.Errorf("no item id: %w", ErrInvalidTransition)
	}
	r, ok := s.records[id]
	if !ok {
		return nil, fmt.Errorf("item %q: %w", id, ErrUnknownItem)
	}
	return r, nil
}

// Item returns a copy of the item as it now stands, with the fields that
// transitions set (promotion_state, promotion_authority, conflict_state).
func (s *State) Item(id string) (*ledgerv1.CanonItem, bool) {
	r, ok := s.records[id]
	if !ok {
		return nil, false
	}
	return proto.CloneOf(r.item), true
}

// BoundaryRequests returns the ids of the boundary-change requests whose
// provenance_ref is ref, in the order first recorded: what an agent has
// asked for one task, found without a scan of the ledger.
func (s *State) BoundaryRequests(ref string) []string { return slices.Clone(s.refs.requests[ref]) }

// Last returns the time of the last transition applied (zero for none):
// every transition of the state happened at or before it.
func (s *State) Last() time.Time { return s.last }

// IDs returns the recorded item ids in the order they were first recorded.
func (s *State) IDs() []string { return slices.Clone(s.order) }

// SupersededBy returns the item that superseded id, if any.
func (s *State) SupersededBy(id string) (string, bool) {
	r, ok := s.records[id]
	if !ok || r.supersededBy == "" {
		return "", false
	}
	return r.supersededBy, true
}

// Transitions returns the accepted transitions in order: the log from which
// Transitions returns the accepted transitions in order; Replay of them
// rebuilds this state.
func (s *State) Transitions() []Transition {
	out := make([]Transition, len(s.log))
	for i, t := range s.log {
		t.Item = proto.CloneOf(t.Item)
		t.Filter = proto.CloneOf(t.Filter)
		out[i] = t
	}
	return out
}

// Replay folds the transitions with At at or before until into a new
// state. ts must be in time order; a refused transition stops the replay,
// because a log of accepted transitions never holds one.
func Replay(ts []Transition, until time.Time, auth Authorities) (*State, error) {
	for i := 1; i < len(ts); i++ {
		if ts[i].At.Before(ts[i-1].At) {
			return nil, fmt.Errorf("replay transition %d: earlier than transition %d: %w", i, i-1, ErrInvalidTransition)
		}
	}
	s := &State{}
	for i, t := range ts {
		if t.At.After(until) {
			break
		}
		if err := s.Apply(t, auth); err != nil {
			return nil, fmt.Errorf("replay transition %d: %w", i, err)
		}
	}
	return s, nil
}

// followable reports whether ref has the shape of a reference a reviewer
// can follow: a scheme naming where to look and a locator without spaces,
// e.g. "policy-repo:contracts/refund.yaml@4f2c9e1" or "item:POL-2026-09".
// It is the regular expression ^[a-z][a-z0-9+.-]*:[^\s]+$ written out,
// because every classification runs it and a ledger holds millions of
// items.
func followable(ref string) bool {
	colon := strings.IndexByte(ref, ':')
	if colon < 1 || colon == len(ref)-1 || ref[0] < 'a' || ref[0] > 'z' {
		return false
	}
	for i := 1; i < colon; i++ {
		switch c := ref[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '.', c == '-':
		default:
			return false
		}
	}
	// \s is ASCII white space; no byte of a multi-byte UTF-8 sequence is.
	return !strings.ContainsAny(ref[colon+1:], " \t\n\f\r")
}

// unresolvable says why an item's provenance_ref does not lead back to a
// reviewable source or transition ("" when it does): free text is not a
// reference, and an "item:" reference must name another item of this
// ledger (seed 000: missing or unresolvable provenance is UNKNOWN).
func (s *State) unresolvable(it *ledgerv1.CanonItem) string {
	ref := it.GetProvenanceRef()
	if !followable(ref) {
		return fmt.Sprintf("provenance_ref %q is not a reference (scheme:locator) a reviewer can follow", ref)
	}
	if id, ok := strings.CutPrefix(ref, "item:"); ok {
		if _, found := s.records[id]; !found || id == it.GetCanonItemId() {
			return fmt.Sprintf("provenance_ref %q names no other item of the ledger", ref)
		}
	}
	return ""
}
