package canon

import (
	"fmt"
	"time"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Proto returns t as the wire message the kernel's log stores. The message
// owns copies of t's item and filter.
func (t Transition) Proto() *ledgerv1.Transition {
	m := &ledgerv1.Transition{
		Kind:    kindToProto(t.Kind),
		Actor:   t.Actor,
		Item:    proto.CloneOf(t.Item),
		ItemId:  t.ItemID,
		OtherId: t.OtherID,
		Note:    t.Note,
		Filter:  proto.CloneOf(t.Filter),
	}
	if !t.At.IsZero() {
		m.At = timestamppb.New(t.At)
	}
	return m
}

// TransitionFromProto is the inverse of Transition.Proto. It refuses an
// unknown kind or a malformed time; everything else is Apply's to judge.
// The transition shares m's item and filter (Apply copies what it keeps),
// so that decoding a long log does not copy every contract twice.
func TransitionFromProto(m *ledgerv1.Transition) (Transition, error) {
	kind, ok := kindFromProto(m.GetKind())
	if !ok {
		return Transition{}, fmt.Errorf("transition kind %s: %w", m.GetKind(), ErrInvalidTransition)
	}
	var at time.Time
	if m.GetAt() != nil {
		if err := m.GetAt().CheckValid(); err != nil {
			return Transition{}, fmt.Errorf("transition at: %v: %w", err, ErrInvalidTransition)
		}
		at = m.GetAt().AsTime()
	}
	return Transition{
		Kind:    kind,
		At:      at,
		Actor:   m.GetActor(),
		Item:    m.GetItem(),
		ItemID:  m.GetItemId(),
		OtherID: m.GetOtherId(),
		Filter:  m.GetFilter(),
		Note:    m.GetNote(),
	}, nil
}

// The mapping is spelled out rather than a numeric cast, so that
// renumbering either enum cannot silently change a stored log's meaning.
func kindToProto(k TransitionKind) ledgerv1.TransitionKind {
	switch k {
	case Propose:
		return ledgerv1.TransitionKind_TRANSITION_KIND_PROPOSE
	case Promote:
		return ledgerv1.TransitionKind_TRANSITION_KIND_PROMOTE
	case Reject:
		return ledgerv1.TransitionKind_TRANSITION_KIND_REJECT
	case Supersede:
		return ledgerv1.TransitionKind_TRANSITION_KIND_SUPERSEDE
	case ResolveConflict:
		return ledgerv1.TransitionKind_TRANSITION_KIND_RESOLVE_CONFLICT
	case DeriveHandoff:
		return ledgerv1.TransitionKind_TRANSITION_KIND_DERIVE_HANDOFF
	}
	return ledgerv1.TransitionKind_TRANSITION_KIND_UNSPECIFIED
}

func kindFromProto(k ledgerv1.TransitionKind) (TransitionKind, bool) {
	for c := Propose; c <= DeriveHandoff; c++ {
		if kindToProto(c) == k {
			return c, true
		}
	}
	return 0, false
}
