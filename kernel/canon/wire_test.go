package canon_test

import (
	"errors"
	"testing"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/kernel/canon"
)

func TestTransitionProtoRoundTrip(t *testing.T) {
	log := append(supersessionLog(),
		reject(30, owner, "POL-9"),
		resolve(31, owner, "POL-9"),
		derive(32, orchestrator, "CTR-1", childTemplate("CTR-1/b"), &ledgerv1.HandoffFilter{Fields: []string{"claim_id"}, MaxActions: 1}),
		canon.Transition{Kind: canon.DeriveHandoff, At: at(33), Actor: orchestrator, ItemID: "CTR-1", Item: childTemplate("CTR-1/c"), Note: "no filter"},
	)
	for _, tr := range log {
		t.Run(tr.Kind.String(), func(t *testing.T) {
			got, err := canon.TransitionFromProto(tr.Proto())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tr, got, protocmp.Transform()); d != "" {
				t.Errorf("round trip (-want +got):\n%s", d)
			}
		})
	}
}

func TestTransitionFromProtoRefuses(t *testing.T) {
	tests := []struct {
		name string
		m    *ledgerv1.Transition
	}{
		{"unset kind", &ledgerv1.Transition{At: timestamppb.New(at(0))}},
		{"undefined kind", &ledgerv1.Transition{Kind: 42, At: timestamppb.New(at(0))}},
		{"invalid time", &ledgerv1.Transition{Kind: ledgerv1.TransitionKind_TRANSITION_KIND_PROPOSE, At: &timestamppb.Timestamp{Nanos: -1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := canon.TransitionFromProto(tc.m); !errors.Is(err, canon.ErrInvalidTransition) {
				t.Errorf("got %v, want ErrInvalidTransition", err)
			}
		})
	}
}
