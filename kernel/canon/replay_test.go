package canon_test

import (
	"errors"
	"testing"
	"time"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/ambitkernel/ambit/kernel/canon"
)

// supersessionLog replaces POL-8 with POL-9: POL-9 is proposed at 10,
// approved and POL-8 superseded at 20.
func supersessionLog() []canon.Transition {
	return []canon.Transition{
		propose(0, owner, policy("POL-8", "limit GBP 800")),
		promote(1, owner, "POL-8"),
		propose(10, owner, policy("POL-9", "limit GBP 500", withSupersedes("POL-8"))),
		promote(20, owner, "POL-9"),
		supersede(20, owner, "POL-8", "POL-9"),
	}
}

// TestReplaySupersession shows that supersession is not deletion: replaying
// to an earlier time reconstructs what was valid then.
func TestReplaySupersession(t *testing.T) {
	tests := []struct {
		name  string
		until time.Time
		want  map[string]ledgerv1.CanonClass
	}{
		{"before anything", at(-1), map[string]ledgerv1.CanonClass{"POL-8": unknown, "POL-9": unknown}},
		{"old policy proposed", at(0), map[string]ledgerv1.CanonClass{"POL-8": provisional, "POL-9": unknown}},
		{"old policy canonical", at(5), map[string]ledgerv1.CanonClass{"POL-8": canonical, "POL-9": unknown}},
		{"new policy proposed, old still canonical", at(15), map[string]ledgerv1.CanonClass{"POL-8": canonical, "POL-9": provisional}},
		{"after supersession", at(20), map[string]ledgerv1.CanonClass{"POL-8": deprecated, "POL-9": canonical}},
		{"long after", at(60 * 24 * 365), map[string]ledgerv1.CanonClass{"POL-8": deprecated, "POL-9": canonical}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := canon.Replay(supersessionLog(), tc.until, defaultAuth())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]ledgerv1.CanonClass{}
			for id := range tc.want {
				got[id] = canon.Classify(s, id, defaultAuth()).Class
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("classes at %s (-want +got):\n%s", tc.until, d)
			}
		})
	}
}

func TestReplayRefusals(t *testing.T) {
	tests := []struct {
		name    string
		log     []canon.Transition
		wantErr error
	}{
		{
			name:    "out of order",
			log:     []canon.Transition{propose(5, owner, policy("POL-1", "x")), promote(4, owner, "POL-1")},
			wantErr: canon.ErrInvalidTransition,
		},
		{
			name:    "out of order after until is still refused",
			log:     []canon.Transition{propose(0, owner, policy("POL-1", "x")), promote(100, owner, "POL-1"), promote(50, owner, "POL-1")},
			wantErr: canon.ErrInvalidTransition,
		},
		{
			name:    "a refused transition stops the replay",
			log:     []canon.Transition{propose(0, owner, policy("POL-1", "x")), promote(1, agent, "POL-1")},
			wantErr: canon.ErrNotAuthorised,
		},
		{
			name: "an accepted log replays",
			log:  supersessionLog(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := canon.Replay(tc.log, at(30), defaultAuth())
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("got %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestReplayOfOwnLog checks that a state's accepted transitions rebuild the
// same state: refusals leave no trace and the log is the whole truth.
func TestReplayOfOwnLog(t *testing.T) {
	auth := defaultAuth()
	s := &canon.State{}
	for _, tr := range append(supersessionLog(),
		promote(21, agent, "POL-9"),                          // refused
		propose(22, owner, policy("POL-9", "limit GBP 400")), // refused: identity reuse
		propose(23, "tool-adapter", toolOutput("TOOL-1", "limit GBP 2000", withConflict("POL-9"))),
	) {
		_ = s.Apply(tr, auth)
	}
	if got, want := len(s.Transitions()), 6; got != want {
		t.Fatalf("got %d accepted transitions, want %d", got, want)
	}
	r, err := canon.Replay(s.Transitions(), at(100), auth)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(canon.ClassifyAll(s, auth), canon.ClassifyAll(r, auth), protocmp.Transform()); d != "" {
		t.Errorf("replayed state differs (-orig +replay):\n%s", d)
	}
	if d := cmp.Diff([]string{"POL-8", "POL-9", "TOOL-1"}, r.IDs()); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	if by, ok := r.SupersededBy("POL-8"); !ok || by != "POL-9" {
		t.Errorf("SupersededBy(POL-8) = %q, %v; want POL-9", by, ok)
	}
}

// TestApplyIsAtomic checks that a refused transition changes nothing, so a
// caller can keep using the state after a refusal.
func TestApplyIsAtomic(t *testing.T) {
	auth := defaultAuth()
	s := &canon.State{}
	for _, tr := range supersessionLog() {
		if err := s.Apply(tr, auth); err != nil {
			t.Fatal(err)
		}
	}
	before := canon.ClassifyAll(s, auth)
	refusals := []canon.Transition{
		propose(30, owner, policy("POL-9", "changed")),
		propose(30, owner, policy("POL-10", "x", withConflict("POL-404"))),
		promote(30, agent, "POL-9"),
		supersede(30, owner, "POL-9", "POL-8"),
		resolve(30, owner, "POL-9"),
		derive(30, orchestrator, "POL-9", childTemplate("POL-9/b"), nil),
		promote(1, owner, "POL-9"),
	}
	for _, tr := range refusals {
		if err := s.Apply(tr, auth); err == nil {
			t.Errorf("%s %s: accepted, want a refusal", tr.Kind, tr.ItemID)
		}
	}
	if d := cmp.Diff(before, canon.ClassifyAll(s, auth), protocmp.Transform()); d != "" {
		t.Errorf("refusals changed the state (-before +after):\n%s", d)
	}
	if got := len(s.Transitions()); got != len(supersessionLog()) {
		t.Errorf("log has %d transitions, want %d", got, len(supersessionLog()))
	}
}

// TestStateCopies checks that callers cannot change the ledger through
// what it returns or what they passed in.
func TestStateCopies(t *testing.T) {
	auth := defaultAuth()
	it := policy("POL-1", "x")
	s := &canon.State{}
	if err := s.Apply(propose(0, owner, it), auth); err != nil {
		t.Fatal(err)
	}
	it.ProvenanceRef = ""
	got, _ := s.Item("POL-1")
	got.Scope = ledgerv1.Scope_SCOPE_SESSION
	if err := s.Apply(promote(1, owner, "POL-1"), auth); err != nil {
		t.Fatal(err)
	}
	if c := canon.Classify(s, "POL-1", auth).Class; c != canonical {
		t.Errorf("got %s, want CANONICAL: the ledger shares memory with its caller", c)
	}
	stored, _ := s.Item("POL-1")
	if stored.GetContentHash() == "" || stored.GetPromotionState() != ledgerv1.PromotionState_PROMOTION_STATE_APPROVED || stored.GetPromotionAuthority() != owner {
		t.Errorf("stored item %v lacks its hash or approval", stored)
	}
}

func TestCode(t *testing.T) {
	s := &canon.State{}
	err := s.Apply(promote(0, owner, "POL-404"), defaultAuth())
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"foreign error", errors.New("boom"), ""},
		{"wrapped sentinel", err, "unknown_item"},
		{"each sentinel", canon.ErrIdentityReuse, "identity_reuse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := canon.Code(tc.err); got != tc.want {
				t.Errorf("Code(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestClassifiedProto(t *testing.T) {
	s, err := canon.Replay(supersessionLog(), at(30), defaultAuth())
	if err != nil {
		t.Fatal(err)
	}
	all := canon.ClassifyAll(s, defaultAuth())
	if len(all) != 2 {
		t.Fatalf("got %d items, want 2", len(all))
	}
	p := all[0].Proto()
	if p.GetItem().GetCanonItemId() != "POL-8" || p.GetClass() != deprecated || len(p.GetReasons()) == 0 {
		t.Errorf("Proto() = %v", p)
	}
}
