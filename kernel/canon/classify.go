package canon

import (
	"fmt"
	"strconv"
	"time"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
)

// Result is an item's computed class and every finding behind it: the
// findings of the deciding rule first, then those of the rules below it in
// precedence order, so one answer shows all that stands between the item and
// canon.
type Result struct {
	Class   ledgerv1.CanonClass
	Reasons []string
}

// Classified is one item with its computed class.
type Classified struct {
	Item *ledgerv1.CanonItem
	Result
}

// Proto returns c as the wire message.
func (c Classified) Proto() *ledgerv1.ClassifiedItem {
	return &ledgerv1.ClassifiedItem{Item: proto.CloneOf(c.Item), Class: c.Class, Reasons: append([]string(nil), c.Reasons...)}
}

// Classify computes the class of item id from the ledger s and the
// authorities in force. The class is never stored: classifying the same
// state with other authorities (a revoked owner, say) gives the answer for
// those authorities. An id the ledger does not hold is UNKNOWN.
//
// Rules, in precedence order (the first that matches decides):
//
//  1. HOLD: a handoff-derived item whose handoff declared no filter.
//  2. DEPRECATED: superseded through an explicit Supersede transition.
//  3. UNKNOWN: provenance_ref, source_origin, scope or lifetime is missing.
//  4. EXTERNAL_UNTRUSTED: origin TOOL, RETRIEVAL or USER without verified
//     OWNER or DELEGATED authority.
//  5. INCONCLUSIVE: an unresolved conflict with an item that is CANONICAL.
//  6. SESSION_LOCAL: scope SESSION or lifetime SESSION.
//  7. CANONICAL: approved by a promotion_authority that Authorities allow at
//     the item's scope (and not the agent that proposed it), with verified
//     OWNER or DELEGATED authority, no unresolved conflict, and, for a
//     handoff-derived item, a CANONICAL parent.
//  8. PROVISIONAL: anything else.
func Classify(s *State, id string, auth Authorities) Result {
	c := classifier{s: s, auth: auth, memo: map[string]Result{}}
	return c.classify(id)
}

// ClassifyAll classifies every item of s in the order first recorded.
func ClassifyAll(s *State, auth Authorities) []Classified {
	all, _, _ := ClassifyPage(s, auth, "", len(s.order))
	return all
}

// ClassifyPage classifies a page of the items of s, as [Classes.Page]
// does: an item reached from the page is classified as ClassifyAll would.
func ClassifyPage(s *State, auth Authorities, after string, limit int) (page []Classified, more, ok bool) {
	from := 0
	if after != "" {
		r, found := s.records[after]
		if !found {
			return nil, false, false
		}
		from = r.place + 1
	}
	ids, more := span(s.order, from, limit)
	c := classifier{s: s, auth: auth, memo: map[string]Result{}}
	page = make([]Classified, len(ids))
	for i, id := range ids {
		page[i] = Classified{Item: proto.CloneOf(s.records[id].item), Result: c.classify(id)}
	}
	return page, more, true
}

type classifier struct {
	s    *State
	auth Authorities
	// memo holds finished results; an item's class depends on the classes
	// of the items it conflicts with and derives from, and memoising keeps
	// a long chain linear.
	memo     map[string]Result
	visiting map[string]bool
	// texts holds the reasons many items share (who approved them, their
	// authority), formatted once: a ledger of a million contracts from a
	// few owners would otherwise hold a million copies of each.
	texts map[text]string
}

// text names a shared reason: its kind and what it is formatted from.
type text struct {
	kind      int
	principal string
	scope     ledgerv1.Scope
	level     ledgerv1.AuthorityLevel
	verified  bool
}

// Kinds of shared reasons.
const (
	textApproved = iota + 1
	textAuthority
)

// shared returns the reason key names, formatting it with format the first
// time.
func (c *classifier) shared(key text, format func() string) string {
	if s, ok := c.texts[key]; ok {
		return s
	}
	if c.texts == nil {
		c.texts = map[text]string{}
	}
	s := format()
	c.texts[key] = s
	return s
}

func (c *classifier) classify(id string) Result {
	if res, ok := c.memo[id]; ok {
		return res
	}
	r, ok := c.s.records[id]
	if !ok {
		return Result{Class: ledgerv1.CanonClass_CANON_CLASS_UNKNOWN, Reasons: []string{fmt.Sprintf("no item %q in the ledger", id)}}
	}
	if c.visiting[id] {
		// Apply only lets an item refer to earlier items, so this is
		// unreachable; it is kept so that a cycle can never recurse forever.
		return Result{Class: ledgerv1.CanonClass_CANON_CLASS_UNKNOWN, Reasons: []string{fmt.Sprintf("item %q refers to itself through its references", id)}}
	}
	if c.visiting == nil {
		c.visiting = map[string]bool{}
	}
	c.visiting[id] = true
	res := c.evaluate(r)
	delete(c.visiting, id)
	c.memo[id] = res
	return res
}

// finding is one rule's verdict on an item; reasons is empty when the rule
// does not apply.
type finding struct {
	class   ledgerv1.CanonClass
	reasons []string
}

func (c *classifier) evaluate(r *record) Result {
	it := r.item
	verified := claimsAuthority(it) && c.auth.Allows(it.GetScope(), r.proposer)

	// Every rule is evaluated, none short-circuits: the result reports all
	// findings, and the first rule with one decides the class.
	var hold, deprecated, unknown, external, inconclusive, session, provisional []string

	if it.GetHandoffParentRef() != "" && !it.GetHandoffFilterDeclared() {
		hold = append(hold, fmt.Sprintf("handoff from %q declared no filter: what the child may reach was never decided", it.GetHandoffParentRef()))
	}

	if r.supersededBy != "" {
		deprecated = append(deprecated, fmt.Sprintf("superseded by %q at %s; kept for replay", r.supersededBy, r.supersededAt.UTC().Format(time.RFC3339)))
	}

	if it.GetProvenanceRef() == "" {
		unknown = append(unknown, "provenance_ref is empty: nothing leads back to a reviewable source")
	} else if why := c.s.unresolvable(it); why != "" {
		unknown = append(unknown, why)
	}
	if it.GetSourceOrigin() == ledgerv1.SourceOrigin_SOURCE_ORIGIN_UNSPECIFIED {
		unknown = append(unknown, "source_origin is unspecified")
	}
	if it.GetScope() == ledgerv1.Scope_SCOPE_UNSPECIFIED {
		unknown = append(unknown, "scope is unspecified")
	}
	if it.GetLifetime() == ledgerv1.Lifetime_LIFETIME_UNSPECIFIED {
		unknown = append(unknown, "lifetime is unspecified")
	}

	authority := c.shared(text{kind: textAuthority, principal: r.proposer, scope: it.GetScope(), level: it.GetAuthorityLevel(), verified: verified},
		func() string { return authorityFinding(it, r.proposer, verified) })
	if isExternal(it.GetSourceOrigin()) && !verified {
		external = append(external, fmt.Sprintf("%s from outside with %s", it.GetSourceOrigin(), authority))
	}

	if it.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED {
		other := c.classify(it.GetConflictsWith())
		if other.Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
			inconclusive = append(inconclusive, fmt.Sprintf("conflicts with canonical %q, unresolved until an owner of it resolves the conflict", it.GetConflictsWith()))
		} else {
			provisional = append(provisional, fmt.Sprintf("unresolved conflict with %q (%s)", it.GetConflictsWith(), other.Class))
		}
	}

	if it.GetScope() == ledgerv1.Scope_SCOPE_SESSION {
		session = append(session, "scope SCOPE_SESSION: valid only inside one session")
	}
	if it.GetLifetime() == ledgerv1.Lifetime_LIFETIME_SESSION {
		session = append(session, "lifetime LIFETIME_SESSION: ends with its session")
	}

	// What CANONICAL needs beyond the rules above.
	switch it.GetPromotionState() {
	case ledgerv1.PromotionState_PROMOTION_STATE_APPROVED:
		pa := it.GetPromotionAuthority()
		switch {
		case pa == "":
			provisional = append(provisional, "promotion_state APPROVED without a promotion_authority")
		case !c.auth.Allows(it.GetScope(), pa):
			provisional = append(provisional, fmt.Sprintf("promotion_authority %q holds no promotion authority for %s", pa, it.GetScope()))
		case it.GetSourceOrigin() == ledgerv1.SourceOrigin_SOURCE_ORIGIN_AGENT && pa == r.proposer:
			provisional = append(provisional, fmt.Sprintf("agent output promoted by its own proposer %q", pa))
		}
	case ledgerv1.PromotionState_PROMOTION_STATE_REJECTED:
		provisional = append(provisional, fmt.Sprintf("promotion rejected by %q", r.rejectedBy))
	default:
		provisional = append(provisional, "not promoted: no promotion event by an authorised actor")
	}
	if !verified && !isExternal(it.GetSourceOrigin()) {
		provisional = append(provisional, authority)
	}
	if p := it.GetHandoffParentRef(); p != "" {
		if pc := c.classify(p).Class; pc != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
			provisional = append(provisional, fmt.Sprintf("handoff parent %q is %s, not CANONICAL", p, pc))
		}
	}

	findings := []finding{
		{ledgerv1.CanonClass_CANON_CLASS_HOLD, hold},
		{ledgerv1.CanonClass_CANON_CLASS_DEPRECATED, deprecated},
		{ledgerv1.CanonClass_CANON_CLASS_UNKNOWN, unknown},
		{ledgerv1.CanonClass_CANON_CLASS_EXTERNAL_UNTRUSTED, external},
		{ledgerv1.CanonClass_CANON_CLASS_INCONCLUSIVE, inconclusive},
		{ledgerv1.CanonClass_CANON_CLASS_SESSION_LOCAL, session},
		{ledgerv1.CanonClass_CANON_CLASS_PROVISIONAL, provisional},
	}
	res := Result{Class: ledgerv1.CanonClass_CANON_CLASS_CANONICAL}
	for _, f := range findings {
		if len(f.reasons) == 0 {
			continue
		}
		if res.Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
			res.Class = f.class
		}
		res.Reasons = append(res.Reasons, f.reasons...)
	}
	if res.Class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		res.Reasons = []string{
			c.shared(text{kind: textApproved, principal: it.GetPromotionAuthority(), scope: it.GetScope()}, func() string {
				return fmt.Sprintf("approved by %q, who holds promotion authority for %s", it.GetPromotionAuthority(), it.GetScope())
			}),
			"provenance " + quote(it.GetProvenanceRef()),
			authority,
		}
		res.Reasons = append(res.Reasons, c.contested(it.GetCanonItemId())...)
	}
	return res
}

// quote is strconv.Quote, without its rune-by-rune pass over the usual
// reference: printable ASCII with no quote or backslash is itself between
// quotes. Every canonical item's reasons quote its provenance, so a start
// over a million items quotes a million references.
func quote(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.Quote(s)
		}
	}
	return `"` + s + `"`
}

// authorityFinding describes the item's authority: verified, unclaimed, or
// claimed by a proposer who does not hold it.
func authorityFinding(it *ledgerv1.CanonItem, proposer string, verified bool) string {
	switch {
	case verified:
		return fmt.Sprintf("%s recorded by %q, who holds authority for %s", it.GetAuthorityLevel(), proposer, it.GetScope())
	case claimsAuthority(it):
		return fmt.Sprintf("%s recorded by %q, who holds no authority for %s", it.GetAuthorityLevel(), proposer, it.GetScope())
	}
	return fmt.Sprintf("%s: no authority to govern %s was delegated", it.GetAuthorityLevel(), it.GetScope())
}

// isExternal reports whether content from origin comes from outside the
// organisation's governance. A user is outside too: what a user says
// governs their own session only once an owner delegates that authority.
func isExternal(origin ledgerv1.SourceOrigin) bool {
	switch origin {
	case ledgerv1.SourceOrigin_SOURCE_ORIGIN_TOOL, ledgerv1.SourceOrigin_SOURCE_ORIGIN_RETRIEVAL, ledgerv1.SourceOrigin_SOURCE_ORIGIN_USER:
		return true
	}
	return false
}

// contested lists the items with an unresolved conflict against id. They do
// not change id's class (a challenge is not a resolution), but an auditor
// should see them.
func (c *classifier) contested(id string) []string {
	var out []string
	for _, other := range c.s.refs.challengers[id] {
		if c.s.records[other].item.GetConflictState() == ledgerv1.ConflictState_CONFLICT_STATE_UNRESOLVED {
			out = append(out, fmt.Sprintf("contested by %q, unresolved", other))
		}
	}
	return out
}
