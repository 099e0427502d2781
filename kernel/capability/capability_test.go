package capability_test

import (
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/capability"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

// TestLifeCycle walks the happy path and the refusals a client meets.
func TestLifeCycle(t *testing.T) {
	for _, tc := range []struct {
		from    capability.Status
		ev      capability.Event
		to      capability.Status
		result  capability.Result
		refusal string
	}{
		{capability.Authorised, capability.Redeem, capability.Redeemed, capability.Move, ""},
		{capability.Redeemed, capability.Redeem, capability.Redeemed, capability.Repeat, ""},
		{capability.Redeemed, capability.Effect, capability.Effected, capability.Move, ""},
		{capability.Effected, capability.Effect, capability.Effected, capability.Repeat, ""},
		{capability.Effected, capability.Verify, capability.Verified, capability.Move, ""},
		{capability.Effected, capability.Mismatch, capability.Failed, capability.Move, ""},
		{capability.Verified, capability.Redeem, capability.Verified, capability.Refuse, "CAPABILITY_USED"},
		{capability.Revoked, capability.Redeem, capability.Revoked, capability.Refuse, "CAPABILITY_REVOKED"},
		{capability.Expired, capability.Redeem, capability.Expired, capability.Refuse, "CAPABILITY_EXPIRED"},
		{capability.Authorised, capability.Effect, capability.Authorised, capability.Refuse, "CAPABILITY_NOT_REDEEMED"},
		{capability.Authorised, capability.Verify, capability.Authorised, capability.Refuse, "COMMITMENT_NOT_EFFECTED"},
		{capability.Redeemed, capability.Verify, capability.Redeemed, capability.Refuse, "COMMITMENT_NOT_EFFECTED"},
		{capability.Authorised, capability.Revoke, capability.Revoked, capability.Move, ""},
		{capability.Redeemed, capability.Revoke, capability.Redeemed, capability.Ignore, ""},
		{capability.Authorised, capability.Expire, capability.Expired, capability.Move, ""},
		{capability.Verified, capability.Expire, capability.Verified, capability.Ignore, ""},
		{capability.Redeemed, capability.TargetRefusal, capability.Refused, capability.Move, ""},
		{capability.Refused, capability.TargetRefusal, capability.Refused, capability.Repeat, ""},
		{capability.Refused, capability.Redeem, capability.Refused, capability.Refuse, "CAPABILITY_CLOSED"},
		{capability.Refused, capability.Effect, capability.Refused, capability.Refuse, "CAPABILITY_CLOSED"},
		{capability.Refused, capability.Verify, capability.Refused, capability.Refuse, "COMMITMENT_NOT_EFFECTED"},
		{capability.Authorised, capability.TargetRefusal, capability.Authorised, capability.Refuse, "CAPABILITY_NOT_REDEEMED"},
		{capability.Effected, capability.TargetRefusal, capability.Effected, capability.Refuse, "EFFECT_CONFLICT"},
		{capability.Verified, capability.TargetRefusal, capability.Verified, capability.Refuse, "EFFECT_CONFLICT"},
	} {
		got := capability.Next(tc.from, tc.ev)
		if got.To != tc.to || got.Result != tc.result || got.Refusal != tc.refusal {
			t.Errorf("%s on %s = %+v, want to %s, result %d, refusal %q", tc.ev, tc.from, got, tc.to, tc.result, tc.refusal)
		}
	}
}

// TestTableIsTotal: every status meets every event with a defined row, and
// no event moves a commitment back to AUTHORISED or out of a terminal
// refusal state.
func TestTableIsTotal(t *testing.T) {
	events := []capability.Event{capability.Redeem, capability.Effect, capability.Verify, capability.Mismatch, capability.Revoke, capability.Expire, capability.TargetRefusal}
	for s := range agentv1.CommitmentStatus_name {
		from := capability.Status(s)
		if from == agentv1.CommitmentStatus_COMMITMENT_STATUS_UNSPECIFIED {
			continue
		}
		for _, ev := range events {
			got := capability.Next(from, ev)
			if got.Refusal == "CAPABILITY_STATE" {
				t.Errorf("%s on %s has no row", ev, from)
			}
			if got.To == capability.Authorised && from != capability.Authorised {
				t.Errorf("%s on %s moves back to AUTHORISED", ev, from)
			}
			if (from == capability.Revoked || from == capability.Expired || from == capability.Refused) && got.To != from {
				t.Errorf("%s on %s leaves a closed capability", ev, from)
			}
			if got.Result != capability.Refuse && got.Refusal != "" {
				t.Errorf("%s on %s is not refused but names %q", ev, from, got.Refusal)
			}
		}
	}
}

func TestEffective(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := capability.Effective(capability.Authorised, now.Add(-time.Second), now); got != capability.Expired {
		t.Errorf("authorised past expiry = %s", got)
	}
	if got := capability.Effective(capability.Authorised, now.Add(time.Second), now); got != capability.Authorised {
		t.Errorf("authorised before expiry = %s", got)
	}
	if got := capability.Effective(capability.Redeemed, now.Add(-time.Hour), now); got != capability.Redeemed {
		t.Errorf("redeemed past expiry = %s", got)
	}
}

func TestOpen(t *testing.T) {
	for s, want := range map[capability.Status]bool{
		capability.Authorised: true, capability.Redeemed: true, capability.Effected: true,
		capability.Verified: false, capability.Failed: false, capability.Revoked: false, capability.Expired: false,
		capability.Refused: false,
	} {
		if got := capability.Open(s); got != want {
			t.Errorf("Open(%s) = %v, want %v", s, got, want)
		}
	}
}

// TestCounts: only a commitment under which something may have happened
// uses up its task's grant.
func TestCounts(t *testing.T) {
	for s, want := range map[capability.Status]bool{
		capability.Authorised: true, capability.Redeemed: true, capability.Effected: true, capability.Verified: true,
		capability.Failed: true, capability.Revoked: false, capability.Expired: false, capability.Refused: false,
	} {
		if got := capability.Counts(s); got != want {
			t.Errorf("Counts(%s) = %v, want %v", s, got, want)
		}
	}
}
