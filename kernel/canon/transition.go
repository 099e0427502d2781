package canon

import (
	"fmt"
	"slices"
	"time"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

// TransitionKind is what a transition does. The zero value is unset and
// every Apply refuses it.
type TransitionKind int

const (
	// Propose records a new item (Transition.Item). Its promotion and
	// conflict-resolution fields must be unset: a proposal is never a
	// decision.
	Propose TransitionKind = iota + 1
	// Promote approves ItemID. Only this transition, by an actor holding
	// promotion authority for the item's scope, sets APPROVED.
	Promote
	// Reject refuses ItemID's promotion, by an actor with authority at its
	// scope. An approved item cannot be rejected; it is superseded instead.
	Reject
	// Supersede replaces ItemID (the old item) with OtherID (the new item,
	// whose supersedes_ref must name the old one), by an actor with
	// authority at both items' scopes. The old item is kept and classifies
	// DEPRECATED; supersession is final.
	Supersede
	// ResolveConflict records that an owner of the contested item (an actor
	// with authority at its scope, and not ItemID's proposer) resolved
	// ItemID's conflict (the item whose conflict_state is UNRESOLVED). The
	// item may then be promoted, or rejected.
	ResolveConflict
	// DeriveHandoff records a child contract item (Transition.Item, a
	// template without content) derived from the parent contract ItemID
	// through Transition.Filter. The child's contract is computed with
	// Intersect; a nil filter records a child that classifies HOLD.
	DeriveHandoff
)

// String returns the fixture name of k, e.g. "resolve_conflict".
func (k TransitionKind) String() string {
	switch k {
	case Propose:
		return "propose"
	case Promote:
		return "promote"
	case Reject:
		return "reject"
	case Supersede:
		return "supersede"
	case ResolveConflict:
		return "resolve_conflict"
	case DeriveHandoff:
		return "derive_handoff"
	}
	return fmt.Sprintf("TransitionKind(%d)", int(k))
}

// ParseTransitionKind is the inverse of TransitionKind.String.
func ParseTransitionKind(s string) (TransitionKind, error) {
	for k := Propose; k <= DeriveHandoff; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("transition kind %q: %w", s, ErrInvalidTransition)
}

// Transition is one event of the ledger. Which fields matter depends on
// Kind; see the constants.
type Transition struct {
	Kind TransitionKind
	// At orders transitions; Apply refuses one earlier than the last.
	At time.Time
	// Actor is the principal that performs the transition. For Propose and
	// DeriveHandoff it becomes the item's proposer.
	Actor string
	// Item is the proposed item (Propose) or the child template
	// (DeriveHandoff).
	Item *ledgerv1.CanonItem
	// ItemID is the item acted on (Promote, Reject, ResolveConflict), the
	// old item (Supersede) or the parent (DeriveHandoff).
	ItemID string
	// OtherID is the new item of a Supersede.
	OtherID string
	// Filter is the declared subset of a DeriveHandoff; nil when none was
	// declared.
	Filter *ledgerv1.HandoffFilter
	// Note is free text for the audit trail (e.g. how a conflict was
	// resolved). It changes nothing.
	Note string
}

// Authorities lists, per scope, the principals allowed to promote, reject,
// supersede and resolve conflicts at that scope, and to claim OWNER or
// DELEGATED authority for items proposed there. Scopes are not nested:
// authority over SCOPE_ORGANISATION grants nothing at SCOPE_WORKSPACE unless
// listed there too, so that every grant of authority is explicit.
type Authorities map[ledgerv1.Scope][]string

// Allows reports whether principal may act at scope. The empty principal
// and SCOPE_UNSPECIFIED are never allowed.
func (a Authorities) Allows(scope ledgerv1.Scope, principal string) bool {
	if principal == "" || scope == ledgerv1.Scope_SCOPE_UNSPECIFIED {
		return false
	}
	return slices.Contains(a[scope], principal)
}
