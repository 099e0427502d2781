package capability

import (
	"time"

	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

// Status is where a commitment stands.
type Status = agentv1.CommitmentStatus

// The statuses.
const (
	Authorised = agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED
	Redeemed   = agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
	Effected   = agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED
	Verified   = agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED
	Failed     = agentv1.CommitmentStatus_COMMITMENT_STATUS_FAILED
	Revoked    = agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED
	Expired    = agentv1.CommitmentStatus_COMMITMENT_STATUS_EXPIRED
	Refused    = agentv1.CommitmentStatus_COMMITMENT_STATUS_REFUSED
)

// Event is something that happens to a capability.
type Event uint8

// The events.
const (
	// Redeem: the action adapter presents the capability before executing.
	Redeem Event = iota + 1
	// Effect: the action adapter records the effect's receipt.
	Effect
	// Verify and Mismatch: the verifier records a readback verdict.
	Verify
	Mismatch
	// Revoke: the record, the contract or the task changed (coupling rule 3).
	Revoke
	// Expire: the capability outlived its expiry unredeemed.
	Expire
	// TargetRefusal: the action adapter records that the effect's target
	// refused it and holds nothing of it.
	TargetRefusal
)

func (e Event) String() string {
	switch e {
	case Redeem:
		return "redeem"
	case Effect:
		return "effect"
	case Verify:
		return "verify"
	case Mismatch:
		return "mismatch"
	case Revoke:
		return "revoke"
	case Expire:
		return "expire"
	case TargetRefusal:
		return "target refusal"
	}
	return "unknown"
}

// Result says what an event does.
type Result uint8

// The results.
const (
	// Move: the commitment moves to the returned status.
	Move Result = iota + 1
	// Repeat: a retry of what already happened; nothing changes and the
	// caller answers as it did the first time.
	Repeat
	// Ignore: the event no longer applies (e.g. revoking a capability that
	// was already redeemed); nothing changes.
	Ignore
	// Refuse: the event is not allowed in this status; Refusal names why.
	Refuse
)

// Transition is one row of the table.
type Transition struct {
	To     Status
	Result Result
	// Refusal is the stable reason of a refusal.
	Refusal string
}

type key struct {
	from Status
	ev   Event
}

// table is the life cycle. A pair missing here falls to the defaults in
// Next: a readback before an effect is refused, revocation and expiry after
// redemption change nothing.
var table = map[key]Transition{
	{Authorised, Redeem}: {To: Redeemed, Result: Move},
	{Redeemed, Redeem}:   {To: Redeemed, Result: Repeat},
	{Effected, Redeem}:   {To: Effected, Result: Repeat},
	{Verified, Redeem}:   {To: Verified, Result: Refuse, Refusal: "CAPABILITY_USED"},
	{Failed, Redeem}:     {To: Failed, Result: Refuse, Refusal: "CAPABILITY_CLOSED"},
	{Revoked, Redeem}:    {To: Revoked, Result: Refuse, Refusal: "CAPABILITY_REVOKED"},
	{Expired, Redeem}:    {To: Expired, Result: Refuse, Refusal: "CAPABILITY_EXPIRED"},
	{Refused, Redeem}:    {To: Refused, Result: Refuse, Refusal: "CAPABILITY_CLOSED"},

	{Redeemed, Effect}:   {To: Effected, Result: Move},
	{Effected, Effect}:   {To: Effected, Result: Repeat},
	{Verified, Effect}:   {To: Verified, Result: Repeat},
	{Failed, Effect}:     {To: Failed, Result: Repeat},
	{Authorised, Effect}: {To: Authorised, Result: Refuse, Refusal: "CAPABILITY_NOT_REDEEMED"},
	{Revoked, Effect}:    {To: Revoked, Result: Refuse, Refusal: "CAPABILITY_NOT_REDEEMED"},
	{Expired, Effect}:    {To: Expired, Result: Refuse, Refusal: "CAPABILITY_NOT_REDEEMED"},
	{Refused, Effect}:    {To: Refused, Result: Refuse, Refusal: "CAPABILITY_CLOSED"},

	// Only a redeemed capability's target can have refused it, and not
	// once an effect is recorded.
	{Redeemed, TargetRefusal}:   {To: Refused, Result: Move},
	{Refused, TargetRefusal}:    {To: Refused, Result: Repeat},
	{Authorised, TargetRefusal}: {To: Authorised, Result: Refuse, Refusal: "CAPABILITY_NOT_REDEEMED"},
	{Revoked, TargetRefusal}:    {To: Revoked, Result: Refuse, Refusal: "CAPABILITY_NOT_REDEEMED"},
	{Expired, TargetRefusal}:    {To: Expired, Result: Refuse, Refusal: "CAPABILITY_NOT_REDEEMED"},
	{Effected, TargetRefusal}:   {To: Effected, Result: Refuse, Refusal: "EFFECT_CONFLICT"},
	{Verified, TargetRefusal}:   {To: Verified, Result: Refuse, Refusal: "EFFECT_CONFLICT"},
	{Failed, TargetRefusal}:     {To: Failed, Result: Refuse, Refusal: "EFFECT_CONFLICT"},

	// A later readback may find the record altered since: it replaces the
	// verdict, and the journal keeps both.
	{Effected, Verify}:   {To: Verified, Result: Move},
	{Verified, Verify}:   {To: Verified, Result: Move},
	{Failed, Verify}:     {To: Verified, Result: Move},
	{Effected, Mismatch}: {To: Failed, Result: Move},
	{Verified, Mismatch}: {To: Failed, Result: Move},
	{Failed, Mismatch}:   {To: Failed, Result: Move},

	{Authorised, Revoke}: {To: Revoked, Result: Move},
	{Authorised, Expire}: {To: Expired, Result: Move},
}

// Next is what event ev does to a commitment in status from.
func Next(from Status, ev Event) Transition {
	if t, ok := table[key{from, ev}]; ok {
		return t
	}
	switch ev {
	case Verify, Mismatch:
		return Transition{To: from, Result: Refuse, Refusal: "COMMITMENT_NOT_EFFECTED"}
	case Revoke, Expire:
		return Transition{To: from, Result: Ignore}
	}
	return Transition{To: from, Result: Refuse, Refusal: "CAPABILITY_STATE"}
}

// Effective is the status a commitment has at now: an authorised
// capability past its expiry is expired, whether or not that has been
// written down yet.
func Effective(s Status, expiresAt, now time.Time) Status {
	if s == Authorised && now.After(expiresAt) {
		return Expired
	}
	return s
}

// Counts reports whether a commitment in status s uses up its task's grant:
// every one but a revoked, expired or refused one, under which nothing
// happened.
func Counts(s Status) bool { return s != Revoked && s != Expired && s != Refused }

// Outstanding reports whether a capability may still be redeemed.
func Outstanding(s Status) bool { return s == Authorised }

// Open reports whether a commitment in status s is not settled yet: it may
// still be redeemed, or its effect or readback is still to come.
func Open(s Status) bool { return s == Authorised || s == Redeemed || s == Effected }
