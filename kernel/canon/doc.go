// Package canon is Ambit's authority ledger (seed 000, DESIGN §3): the rules
// by which a policy, contract, summary or tool output becomes durable canon,
// and the explanation of why an item is or is not canon. It is pure: no
// clock, no I/O, no globals (the fixture loader in load.go is the one file
// that reads files).
//
// # The ledger is a fold
//
// A [State] is the fold of accepted [Transition]s. [State.Apply] records one
// transition or refuses it with an error that wraps a sentinel
// ([ErrIdentityReuse], [ErrNotAuthorised], [ErrSelfPromotion], ...; [Code]
// names each), leaving the state unchanged. [Replay] rebuilds the state as
// it stood at any time, so a past decision can be checked against what was
// valid then. [Authorities] lists who may promote at each scope.
// [Transition.Proto] and [TransitionFromProto] convert a transition to and
// from the wire form the kernel's log stores.
//
// A long ledger need not be folded from its first transition: [State.Snapshot]
// copies a state's facts, [Snapshot.WriteTo] writes them down without the
// contracts' content, and [ReadSnapshot] reads them back into a state that
// folds the later transitions exactly as the uninterrupted fold would.
// [State.Compact] drops the contracts of a state's durable items, which a
// [ContentFunc] loads again from the journal when a rule needs one; the
// content hash ([WithContent]) proves what was loaded.
//
// The transitions enforce the seed's rules as they happen:
//
//   - Identity: a reused canon_item_id with other content or metadata is
//     refused; the same item again is a no-op. [ContentHash] is filled in,
//     and a declared hash that disagrees with the content is refused.
//   - Origin is not authority: a proposal may claim OWNER or DELEGATED
//     authority only if its proposer holds authority at the item's scope.
//   - Promotion is an event: a proposal that carries an approval, a
//     rejection, a conflict resolution or handoff fields is refused. Only a
//     Promote by an actor in [Authorities] for the item's scope approves,
//     only for an item with provenance and no unresolved conflict, and
//     never agent output by the agent that proposed it.
//   - Conflicts are preserved until an owner of the contested item (never
//     the challenger) resolves them with ResolveConflict.
//   - Supersession is explicit on both sides (the new item's
//     supersedes_ref and a Supersede by an authorised actor) and final; the
//     old item is kept.
//   - A handoff is a DeriveHandoff: the child's contract is computed by
//     [Intersect] from the parent and the declared filter, never declared,
//     so it can only shrink.
//   - Contraction debt: a contract that widens a predecessor (the item it
//     supersedes, once promoted, or a CANONICAL contract bound to the same
//     task) is promoted only when a CANONICAL debt record
//     (ITEM_KIND_DEBT_RECORD) names both contracts and accepts the
//     widening; otherwise the Promote is refused with
//     [ErrContractionDebtUnpaid]. Widening is computed by package reach. A
//     debt record is refused when proposed unless it names exactly the
//     routes the widening adds or widens and the limits it relaxes, re-runs
//     every failure family they touch and carries the approver's decision.
//
// # Classes are computed
//
// [Classify] and [ClassifyAll] compute each item's class from the ledger and
// the authorities in force; a class is never stored. The first matching rule
// decides, and every rule's findings are reported as reasons:
//
//  1. HOLD — a handoff without a declared filter. Checked first because
//     nothing else about the child can be trusted while its reach is
//     undecided.
//  2. DEPRECATED — superseded. A replaced item stays replaced whatever else
//     is true of it.
//  3. UNKNOWN — provenance_ref, source_origin, scope or lifetime missing.
//     Before origin and scope, because without provenance the ledger cannot
//     vouch for the rest of the row: a summary without provenance is UNKNOWN,
//     not SESSION_LOCAL (the seed allows either; UNKNOWN is the stricter).
//  4. EXTERNAL_UNTRUSTED — origin TOOL, RETRIEVAL or USER without verified
//     OWNER or DELEGATED authority. Before conflicts: an undelegated tool
//     output that disagrees with policy is untrusted, not a live dispute.
//  5. INCONCLUSIVE — an unresolved conflict with an item that is CANONICAL.
//     A conflict with something that is not canon blocks canon but is not a
//     dispute over canon, so such an item is PROVISIONAL.
//  6. SESSION_LOCAL — scope SESSION or lifetime SESSION (the two are
//     independent; either confines the item to its session).
//  7. CANONICAL — approved by a promotion_authority the [Authorities] allow
//     at the item's scope, not self-promoted agent output, with verified
//     OWNER or DELEGATED authority, no unresolved conflict and, for a
//     handoff child, a CANONICAL parent.
//  8. PROVISIONAL — anything else: proposed, rejected, approved by someone
//     who no longer holds authority, or lacking authority.
//
// Because classes are recomputed, removing a principal from [Authorities]
// demotes what they approved, and a child contract loses canon when its
// parent is superseded.
//
// [Classes] keeps every item's class current as transitions apply:
// [Classes.Update] reclassifies only the items the new transitions touched
// and those whose class reads theirs (challengers, handoff children, items
// citing a new item), so a transition costs the same in a ledger of ten
// items as in one of a million. Its answers equal [ClassifyAll]'s, which
// a property test checks after every transition.
//
// # Handoff
//
// [Intersect] returns the child contract: every list of the parent
// intersected with the filter, limits lowered, mutable self-facts dropped.
// A nil filter returns the whole parent, which is why the ledger records
// such a child as HOLD.
//
// # Fixtures
//
// The seed's eight fixtures, its four dangerous shortcuts and two of
// contraction debt ship as YAML in
// fixtures/ ([ShippedFixtures]); [LoadFixtures] and [LoadFixtureDir] read
// others, [ParseFixture] decodes one strictly, and [Run] checks one,
// reporting every step, class and contract it checks.
package canon
