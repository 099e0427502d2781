package canon

import "errors"

// Refusals of Apply. Each is a sentinel matched with errors.Is; the wrapping
// error names the transition and the item. Code gives each a stable,
// machine-readable name for fixtures and for the API layer.
var (
	// ErrInvalidItem refuses a malformed item (no identity, no kind, a
	// contract where text belongs, ...).
	ErrInvalidItem = errors.New("invalid item")
	// ErrInvalidTransition refuses a transition that is malformed or not
	// possible from the item's current state.
	ErrInvalidTransition = errors.New("invalid transition")
	// ErrIdentityReuse refuses a proposal that reuses a canon_item_id with
	// different content or metadata: changed content needs a new identity.
	ErrIdentityReuse = errors.New("identity reuse")
	// ErrHashMismatch refuses an item whose declared content_hash is not the
	// hash of its content.
	ErrHashMismatch = errors.New("content hash mismatch")
	// ErrUnknownItem refuses a transition that names an item the ledger has
	// not recorded.
	ErrUnknownItem = errors.New("unknown item")
	// ErrNotAuthorised refuses an actor that holds no promotion authority
	// for the scope concerned, or a proposal that claims authority its
	// proposer cannot grant.
	ErrNotAuthorised = errors.New("not authorised")
	// ErrSelfPromotion refuses a party approving its own item where a
	// second party is required: agent output promoted by the agent that
	// proposed it, or a conflict resolved by the item that raised it.
	ErrSelfPromotion = errors.New("self-promotion")
	// ErrForgedDecision refuses a proposal that carries a decision only a
	// transition may record: an approval, a rejection, a conflict
	// resolution or a handoff derivation.
	ErrForgedDecision = errors.New("decision claimed by a proposal")
	// ErrMissingProvenance refuses to promote an item without provenance.
	ErrMissingProvenance = errors.New("missing provenance")
	// ErrUnresolvedConflict refuses to promote an item whose conflict no
	// authorised owner has resolved.
	ErrUnresolvedConflict = errors.New("unresolved conflict")
	// ErrSuperseded refuses a transition on an item that has been
	// superseded: supersession is final, and the item is kept for replay.
	ErrSuperseded = errors.New("superseded")
	// ErrInvalidFilter refuses a handoff filter that cannot be intersected
	// with its parent (e.g. a limit in another currency).
	ErrInvalidFilter = errors.New("invalid handoff filter")
	// ErrContractionDebtUnpaid refuses to promote a contract that widens a
	// predecessor (the contract it supersedes, or a CANONICAL contract of
	// the same task) while no CANONICAL debt record accepts the widening.
	ErrContractionDebtUnpaid = errors.New("contraction debt unpaid")
)

// codes pairs each sentinel with its stable name. It is read-only.
func codes() []struct {
	code string
	err  error
} {
	return []struct {
		code string
		err  error
	}{
		{"invalid_item", ErrInvalidItem},
		{"invalid_transition", ErrInvalidTransition},
		{"identity_reuse", ErrIdentityReuse},
		{"hash_mismatch", ErrHashMismatch},
		{"unknown_item", ErrUnknownItem},
		{"not_authorised", ErrNotAuthorised},
		{"self_promotion", ErrSelfPromotion},
		{"forged_decision", ErrForgedDecision},
		{"missing_provenance", ErrMissingProvenance},
		{"unresolved_conflict", ErrUnresolvedConflict},
		{"superseded", ErrSuperseded},
		{"invalid_filter", ErrInvalidFilter},
		{"contraction_debt_unpaid", ErrContractionDebtUnpaid},
	}
}

// Code returns the stable name of the refusal err wraps, e.g.
// "identity_reuse", or "" when err is nil or not a refusal of this package.
// Fixtures name expected refusals with these codes.
func Code(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range codes() {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

// knownCode reports whether code names a refusal.
func knownCode(code string) bool {
	for _, c := range codes() {
		if c.code == code {
			return true
		}
	}
	return false
}
