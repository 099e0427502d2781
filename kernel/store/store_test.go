package store_test

import (
	"fmt"
	"slices"
	"strings"

	"bytes"
	"context"
	"errors"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/store"
	"github.com/ambitkernel/ambit/kernel/store/storetest"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var t0 = time.Date(2026, 9, 20, 9, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), path, store.DurabilityNormal)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	return open(t, storetest.DSN(t, filepath.Join(t.TempDir(), "k.db")))
}

// update runs fn in a write transaction and fails the test on error.
func update(t *testing.T, s *store.Store, fn func(tx store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t *testing.T, s *store.Store, fn func(tx store.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

func TestOpenDurability(t *testing.T) {
	for _, d := range []store.Durability{store.DurabilityFull, store.DurabilityNormal} {
		t.Run(string(d), func(t *testing.T) {
			s, err := store.Open(context.Background(), storetest.DSN(t, filepath.Join(t.TempDir(), "k.db")), d)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	if _, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "no", "such", "dir", "k.db"), store.DurabilityFull); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

func TestEvidence(t *testing.T) {
	s := newStore(t)
	ev := store.Evidence{ReceiptID: "ev-1", TaskID: "task-1", EnvelopeHash: "aa", Source: "claims_db", RecordKey: "C-1001",
		StateVersion: "claims-v42", ReadAt: t0.Add(123456 * time.Microsecond)}
	tests := []struct {
		name     string
		in       store.Evidence
		inserted bool
		wantErr  bool
	}{
		{"first", ev, true, false},
		{"same receipt again", ev, false, false},
		{"same id, other content", func() store.Evidence { e := ev; e.EnvelopeHash = "bb"; return e }(), false, true},
		{"another receipt", func() store.Evidence { e := ev; e.ReceiptID, e.EnvelopeHash = "ev-2", "cc"; return e }(), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inserted bool
			err := s.Update(context.Background(), func(tx store.Tx) error {
				var err error
				inserted, err = tx.InsertEvidence(tt.in)
				return err
			})
			if (err != nil) != tt.wantErr || inserted != tt.inserted {
				t.Errorf("InsertEvidence = %v, %v; want inserted %v, error %v", inserted, err, tt.inserted, tt.wantErr)
			}
		})
	}
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Evidence("ev-1")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(ev, got); diff != "" {
			t.Errorf("Evidence (-want +got):\n%s", diff)
		}
		if _, err := tx.Evidence("ev-nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing evidence: %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestRecordVersion(t *testing.T) {
	s := newStore(t)
	view(t, s, func(tx store.Tx) error {
		v, ok, err := tx.RecordVersion("claims_db", "C-1001")
		if err != nil || ok || v != "" {
			t.Errorf("absent record = %q, %v, %v; want ok=false", v, ok, err)
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error { return tx.SetRecordVersion("claims_db", "C-1001", "claims-v42", t0) })
	update(t, s, func(tx store.Tx) error { return tx.SetRecordVersion("claims_db", "C-1001", "claims-v43", t0) })
	view(t, s, func(tx store.Tx) error {
		for _, c := range []struct {
			source, key, want string
			ok                bool
		}{
			{"claims_db", "C-1001", "claims-v43", true},
			{"claims_db", "C-1002", "", false},
			{"receipt_upload", "C-1001", "", false},
		} {
			v, ok, err := tx.RecordVersion(c.source, c.key)
			if err != nil || ok != c.ok || v != c.want {
				t.Errorf("RecordVersion(%s, %s) = %q, %v, %v; want %q, %v", c.source, c.key, v, ok, err, c.want, c.ok)
			}
		}
		return nil
	})
}

func TestTasks(t *testing.T) {
	s := newStore(t)
	view(t, s, func(tx store.Tx) error {
		if _, err := tx.Task("task-1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unbound task: %v, want ErrNotFound", err)
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		for _, b := range [][2]string{{"task-2", "CTR-A"}, {"task-1", "CTR-A"}, {"task-3", "CTR-B"}, {"task-3", "CTR-A"}} {
			if err := tx.BindTask(b[0], store.Task{ItemID: b[1], Agent: "agent"}, t0); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx store.Tx) error {
		if b, err := tx.Task("task-3"); err != nil || b.ItemID != "CTR-A" {
			t.Errorf("rebound task-3 = %q, %v; want CTR-A", b.ItemID, err)
		}
		got, err := tx.TasksBoundTo("CTR-A")
		if diff := cmp.Diff([]string{"task-1", "task-2", "task-3"}, got); diff != "" || err != nil {
			t.Errorf("TasksBoundTo(CTR-A) %v (-want +got):\n%s", err, diff)
		}
		if got, err := tx.TasksBoundTo("CTR-B"); len(got) != 0 || err != nil {
			t.Errorf("TasksBoundTo(CTR-B) = %v, %v; want none", got, err)
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		return tx.BindTask("task-4", store.Task{ItemID: "CTR-B", Agent: "other"}, t0)
	})
	view(t, s, func(tx store.Tx) error {
		ids := func(bs []store.BoundTask) (out []string) {
			for _, b := range bs {
				out = append(out, b.TaskID+"@"+b.ItemID+"/"+b.Agent)
			}
			return out
		}
		for _, tc := range []struct {
			after, agent, item string
			limit              int
			want               []string
		}{
			{"", "", "", 2, []string{"task-1@CTR-A/agent", "task-2@CTR-A/agent"}},
			{"task-2", "", "", 5, []string{"task-3@CTR-A/agent", "task-4@CTR-B/other"}},
			{"", "other", "", 5, []string{"task-4@CTR-B/other"}},
			{"task-1", "agent", "CTR-A", 5, []string{"task-2@CTR-A/agent", "task-3@CTR-A/agent"}},
			{"", "", "CTR-C", 5, nil},
		} {
			got, err := tx.Tasks(tc.after, tc.agent, tc.item, tc.limit)
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" || err != nil {
				t.Errorf("Tasks(%q, %q, %q, %d) %v (-want +got):\n%s", tc.after, tc.agent, tc.item, tc.limit, err, diff)
			}
		}
		return nil
	})
}

func capability(id, task, record string, status agentv1.CommitmentStatus, issued time.Time) store.Capability {
	return store.Capability{
		CapabilityID: id, DecisionID: "dec-" + id, TaskID: task, Record: record, StateVersion: "claims-v42",
		IdempotencyKey: "idem-" + id, Tool: "refund", Currency: "GBP", AmountMinor: 1740, Status: status,
		IssuedAt: issued, ExpiresAt: issued.Add(5 * time.Minute),
	}
}

func ids(cs []store.Capability) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.CapabilityID)
	}
	return out
}

func TestCapabilities(t *testing.T) {
	s := newStore(t)
	const (
		authorised = agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED
		redeemed   = agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED
		revoked    = agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED
	)
	caps := []store.Capability{
		capability("a", "task-1", "claims_db/C-1", authorised, t0.Add(1*time.Second)),
		capability("b", "task-1", "claims_db/C-2", redeemed, t0.Add(2*time.Second)),
		capability("c", "task-2", "claims_db/C-1", authorised, t0.Add(3*time.Second)),
		capability("d", "task-2", "claims_db/C-3", authorised, t0.Add(4*time.Second)),
		capability("e", "task-3", "", authorised, t0.Add(5*time.Second)),
		capability("f", "task-1", "claims_db/C-1", revoked, t0.Add(6*time.Second)),
	}
	update(t, s, func(tx store.Tx) error {
		for _, c := range caps {
			if err := tx.InsertCapability(c); err != nil {
				return err
			}
		}
		return nil
	})

	// Identifiers are unique. Idempotency keys are not indexed: the
	// kernel makes them from the identifiers.
	if err := s.Update(context.Background(), func(tx store.Tx) error { return tx.InsertCapability(caps[0]) }); err == nil {
		t.Errorf("inserting %s again succeeded", caps[0].CapabilityID)
	}

	view(t, s, func(tx store.Tx) error {
		got, err := tx.Capability("a")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(caps[0], got); diff != "" {
			t.Errorf("Capability round trip (-want +got):\n%s", diff)
		}
		if _, err := tx.Capability("nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing capability: %v, want ErrNotFound", err)
		}
		// A page at a time, in the identifiers' order, of every task or of
		// one.
		for _, tc := range []struct {
			task, after string
			limit       int
			want        []string
		}{
			{"", "", 100, []string{"a", "b", "c", "d", "e", "f"}},
			{"", "", 4, []string{"a", "b", "c", "d"}},
			{"", "d", 4, []string{"e", "f"}},
			{"", "f", 4, []string{}},
			{"task-1", "", 2, []string{"a", "b"}},
			{"task-1", "b", 2, []string{"f"}},
		} {
			page, err := tx.CapabilitiesAfter(tc.task, tc.after, tc.limit)
			if diff := cmp.Diff(tc.want, ids(page)); diff != "" || err != nil {
				t.Errorf("CapabilitiesAfter(%q, %q, %d) %v (-want +got):\n%s", tc.task, tc.after, tc.limit, err, diff)
			}
		}
		one, err := tx.Capabilities("task-1")
		if diff := cmp.Diff([]string{"a", "b", "f"}, ids(one)); diff != "" || err != nil {
			t.Errorf("Capabilities(task-1) %v (-want +got):\n%s", err, diff)
		}
		return nil
	})

	tests := []struct {
		name         string
		record, task string
		want         []string
	}{
		{"by record", "claims_db/C-1", "", []string{"a", "c"}},
		{"by task", "", "task-2", []string{"c", "d"}},
		{"by record or task", "claims_db/C-3", "task-1", []string{"a", "d"}},
		{"redeemed is not outstanding", "claims_db/C-2", "", []string{}},
		{"nothing", "claims_db/C-9", "task-9", []string{}},
	}
	for _, tt := range tests {
		t.Run("outstanding "+tt.name, func(t *testing.T) {
			view(t, s, func(tx store.Tx) error {
				got, err := tx.Outstanding(tt.record, tt.task)
				if err != nil {
					return err
				}
				if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
					t.Errorf("Outstanding(%q, %q) (-want +got):\n%s", tt.record, tt.task, diff)
				}
				return nil
			})
		})
	}

	// UpdateCapability writes the commitment fields and only those.
	changed := caps[0]
	changed.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED
	changed.EffectReceiptID, changed.ReadbackReceiptID, changed.Note = "eff-1", "rb-1", "note"
	tampered := changed
	tampered.AmountMinor, tampered.TaskID, tampered.Record = 999999, "task-9", "x/y"
	update(t, s, func(tx store.Tx) error { return tx.UpdateCapability(tampered) })
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Capability("a")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(changed, got); diff != "" {
			t.Errorf("after UpdateCapability (-want +got):\n%s", diff)
		}
		return nil
	})
}

// TestCapabilitiesOldestFirst: Capabilities promises oldest first, and times
// are compared as stored text: a whole second must sort before a fraction of
// the same second.
func TestCapabilitiesOldestFirst(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx store.Tx) error {
		if err := tx.InsertCapability(capability("later", "task-1", "r", agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, t0.Add(500*time.Millisecond))); err != nil {
			return err
		}
		return tx.InsertCapability(capability("earlier", "task-1", "r", agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, t0))
	})
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Capabilities("task-1")
		if err != nil {
			return err
		}
		if diff := cmp.Diff([]string{"earlier", "later"}, ids(got)); diff != "" {
			t.Errorf("Capabilities (-want +got):\n%s", diff)
		}
		return nil
	})
}

func TestUsage(t *testing.T) {
	s := newStore(t)
	now := t0.Add(time.Hour)
	st := func(c store.Capability, status agentv1.CommitmentStatus, expires time.Time, currency string, minor int64) store.Capability {
		c.Status, c.ExpiresAt, c.Currency, c.AmountMinor = status, expires, currency, minor
		return c
	}
	update(t, s, func(tx store.Tx) error {
		for _, c := range []store.Capability{
			st(capability("live", "task-1", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, now.Add(time.Minute), "GBP", 100),
			st(capability("at-expiry", "task-1", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, now, "GBP", 200),
			st(capability("expired", "task-1", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, now.Add(-time.Microsecond), "GBP", 400),
			st(capability("revoked", "task-1", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED, now.Add(time.Minute), "GBP", 800),
			st(capability("redeemed-expired", "task-1", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED, t0, "GBP", 1600),
			st(capability("verified", "task-1", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_VERIFIED, t0, "EUR", 3200),
			st(capability("email", "task-1", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED, t0, "", 0),
			st(capability("other-task", "task-2", "r", 0, t0), agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, now.Add(time.Minute), "GBP", 6400),
		} {
			if err := tx.InsertCapability(c); err != nil {
				return err
			}
		}
		return nil
	})
	tests := []struct {
		task, currency string
		count          int32
		sum            int64
	}{
		{"task-1", "GBP", 5, 100 + 200 + 1600},
		{"task-1", "EUR", 5, 3200},
		{"task-1", "", 5, 0},
		{"task-2", "GBP", 1, 6400},
		{"task-9", "GBP", 0, 0},
	}
	// Expiry is marked by a writer; until then the counters still hold the
	// expired capability.
	view(t, s, func(tx store.Tx) error {
		if count, _, err := tx.Usage("task-1", "GBP"); err != nil || count != 6 {
			t.Errorf("Usage before ExpireDue = %d, %v; want 6", count, err)
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		for _, task := range []string{"task-1", "task-2"} {
			if err := tx.ExpireDue(task, now); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tt := range tests {
		view(t, s, func(tx store.Tx) error {
			count, sum, err := tx.Usage(tt.task, tt.currency)
			if err != nil || count != tt.count || sum != tt.sum {
				t.Errorf("Usage(%s, %q) = %d, %d, %v; want %d, %d", tt.task, tt.currency, count, sum, err, tt.count, tt.sum)
			}
			return nil
		})
	}
}

func approval(id, task, record string, state kernelv1.ApprovalState, at time.Time) store.Approval {
	return store.Approval{EffectHash: "hash-" + id, Record: record, Body: &kernelv1.Approval{
		ApprovalId: id, TaskId: task, DecisionId: "dec-" + id, State: state, RequestedAt: timestamppb.New(at),
		Call:    &contractv1.ToolCall{Tool: "refund", ArgumentsJson: `{"amount":{"currency_code":"GBP","minor_units":7400},"claim_id":"C-1","payee_id":"employee-7"}`},
		Reasons: []*contractv1.Reason{{Aperture: contractv1.Aperture_APERTURE_EXECUTIVE, Code: contractv1.ReasonCode_REASON_CODE_APPROVAL_REQUIRED}},
	}}
}

func approvalIDs(as []store.Approval) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.Body.GetApprovalId())
	}
	return out
}

func TestApprovals(t *testing.T) {
	s := newStore(t)
	const (
		pending   = kernelv1.ApprovalState_APPROVAL_STATE_PENDING
		approved  = kernelv1.ApprovalState_APPROVAL_STATE_APPROVED
		rejected  = kernelv1.ApprovalState_APPROVAL_STATE_REJECTED
		consumed  = kernelv1.ApprovalState_APPROVAL_STATE_CONSUMED
		cancelled = kernelv1.ApprovalState_APPROVAL_STATE_CANCELLED
	)
	rows := []store.Approval{
		approval("p1", "task-1", "claims_db/C-1", pending, t0.Add(1*time.Second)),
		approval("a1", "task-1", "claims_db/C-1", approved, t0.Add(2*time.Second)),
		approval("r1", "task-1", "claims_db/C-1", rejected, t0.Add(3*time.Second)),
		approval("c1", "task-2", "claims_db/C-1", consumed, t0.Add(4*time.Second)),
		approval("x1", "task-2", "claims_db/C-1", cancelled, t0.Add(5*time.Second)),
		approval("p2", "task-2", "claims_db/C-2", pending, t0.Add(6*time.Second)),
		approval("p3", "task-3", "", pending, t0.Add(7*time.Second)),
	}
	update(t, s, func(tx store.Tx) error {
		for _, a := range rows {
			if err := tx.InsertApproval(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.Update(context.Background(), func(tx store.Tx) error { return tx.InsertApproval(rows[0]) }); err == nil {
		t.Error("inserting an approval twice succeeded")
	}

	view(t, s, func(tx store.Tx) error {
		got, err := tx.Approval("a1")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(rows[1], got, protocmp.Transform()); diff != "" {
			t.Errorf("Approval round trip (-want +got):\n%s", diff)
		}
		if _, err := tx.Approval("nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing approval: %v, want ErrNotFound", err)
		}
		for state, want := range map[kernelv1.ApprovalState][]string{
			pending: {"p1", "p2", "p3"}, approved: {"a1"}, rejected: {"r1"}, consumed: {"c1"}, cancelled: {"x1"},
		} {
			got, err := tx.ApprovalsAfter(state, "", 100)
			if diff := cmp.Diff(want, approvalIDs(got)); diff != "" || err != nil {
				t.Errorf("ApprovalsAfter(%s) %v (-want +got):\n%s", state, err, diff)
			}
		}
		// Pages follow the identifiers' order, from after the one given.
		for _, tt := range []struct {
			after string
			limit int
			want  []string
		}{
			{"", 2, []string{"p1", "p2"}},
			{"p2", 2, []string{"p3"}},
			{"p3", 2, []string{}},
			{"p15", 1, []string{"p2"}}, // need not name an approval
		} {
			got, err := tx.ApprovalsAfter(pending, tt.after, tt.limit)
			if diff := cmp.Diff(tt.want, approvalIDs(got)); diff != "" || err != nil {
				t.Errorf("ApprovalsAfter(pending, %q, %d) %v (-want +got):\n%s", tt.after, tt.limit, err, diff)
			}
		}
		return nil
	})

	tests := []struct {
		name         string
		record, task string
		want         []string
	}{
		{"by record", "claims_db/C-1", "", []string{"p1", "a1"}},
		{"by task", "", "task-2", []string{"p2"}},
		{"by record or task", "claims_db/C-2", "task-1", []string{"p1", "a1", "p2"}},
		{"nothing", "claims_db/C-9", "task-9", []string{}},
	}
	for _, tt := range tests {
		t.Run("open "+tt.name, func(t *testing.T) {
			view(t, s, func(tx store.Tx) error {
				got, err := tx.OpenApprovals(tt.record, tt.task)
				if err != nil {
					return err
				}
				if diff := cmp.Diff(tt.want, approvalIDs(got)); diff != "" {
					t.Errorf("OpenApprovals(%q, %q) (-want +got):\n%s", tt.record, tt.task, diff)
				}
				return nil
			})
		})
	}

	// UpdateApproval writes state, decider, note and body.
	a := rows[0]
	a.Body.State, a.Body.DecidedBy, a.Body.Note = approved, "approver", "ok"
	update(t, s, func(tx store.Tx) error { return tx.UpdateApproval(a) })
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Approval("p1")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(a, got, protocmp.Transform()); diff != "" {
			t.Errorf("after UpdateApproval (-want +got):\n%s", diff)
		}
		return nil
	})
}

func TestTransactions(t *testing.T) {
	path := storetest.DSN(t, filepath.Join(t.TempDir(), "k.db"))
	s := open(t, path)
	ctx := context.Background()
	boom := errors.New("boom")

	view(t, s, func(tx store.Tx) error {
		h, err := tx.Head()
		if err != nil || h.Size != 0 || !bytes.Equal(h.Root, journal.EmptyRoot()) {
			t.Errorf("empty journal head = %+v, %v", h, err)
		}
		return nil
	})

	// A failed update leaves nothing behind, journal included.
	err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.BindTask("task-1", store.Task{ItemID: "CTR-A", Agent: "agent"}, t0); err != nil {
			return err
		}
		if _, err := tx.Append(t0, "task.bind", "task-1", []byte("CTR-A")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want the callback's error", err)
	}
	// A write inside View is refused (a View reads on the read-only
	// connections) and leaves nothing behind.
	if err := s.View(ctx, func(tx store.Tx) error {
		return tx.BindTask("task-2", store.Task{ItemID: "CTR-A", Agent: "agent"}, t0)
	}); err == nil {
		t.Fatal("a write inside View succeeded")
	}
	view(t, s, func(tx store.Tx) error {
		for _, task := range []string{"task-1", "task-2"} {
			if _, err := tx.Task(task); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s after rollback: %v, want ErrNotFound", task, err)
			}
		}
		return nil
	})
	if es, err := s.Entries(ctx, 0, 0); err != nil || len(es) != 0 {
		t.Errorf("journal after rollback = %d entries, %v", len(es), err)
	}

	// A committed update is journaled and survives reopening.
	var head []byte
	update(t, s, func(tx store.Tx) error {
		if err := tx.BindTask("task-1", store.Task{ItemID: "CTR-A", Agent: "agent"}, t0); err != nil {
			return err
		}
		for _, k := range []string{"task.bind", "evidence", "decision"} {
			e, err := tx.Append(t0, k, "task-1", []byte(k))
			if err != nil {
				return err
			}
			head = append(head, e.LeafHash...)
		}
		h, err := tx.Head()
		// Three leaves: HashChildren(HashChildren(l1, l2), l3).
		want := journal.Hasher.HashChildren(journal.Hasher.HashChildren(head[:32], head[32:64]), head[64:])
		if err != nil || h.Size != 3 || !bytes.Equal(h.Root, want) {
			t.Errorf("Head in the transaction = %+v, %v; want size 3, root %x", h, err, want)
		}
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	es, err := s.Entries(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Seq  int64
		Kind string
		Body string
	}
	var got []entry
	for _, e := range es {
		got = append(got, entry{e.Seq, e.Kind, string(e.Body)})
	}
	want := []entry{{1, "task.bind", "task.bind"}, {2, "evidence", "evidence"}, {3, "decision", "decision"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries after reopening (-want +got):\n%s", diff)
	}
	if !bytes.Equal(es[2].LeafHash, head[64:]) || !es[0].At.Equal(t0) {
		t.Errorf("last leaf %x at %s, want %x at %s", es[2].LeafHash, es[0].At, head[64:], t0)
	}
	if s.JournalSize() != 3 {
		t.Errorf("journal size after reopening = %d, want 3", s.JournalSize())
	}
	page, err := s.Entries(ctx, 1, 1)
	if err != nil || len(page) != 1 || page[0].Seq != 2 {
		t.Errorf("Entries(1, 1) = %v, %v", page, err)
	}
	view(t, s, func(tx store.Tx) error {
		if b, err := tx.Task("task-1"); err != nil || b.ItemID != "CTR-A" {
			t.Errorf("task-1 after reopening = %q, %v", b.ItemID, err)
		}
		return nil
	})
}

func TestUpdateCanceledContext(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := s.Update(ctx, func(tx store.Tx) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("Update with a cancelled context = %v (callback ran: %v), want an error", err, called)
	}
}

// TestOpenRefusesNewerSchema: a database migrated by a newer kernel is
// refused at open, naming both versions, and left as it was.
func TestOpenRefusesNewerSchema(t *testing.T) {
	dsn := storetest.DSN(t, filepath.Join(t.TempDir(), "k.db"))
	s := open(t, dsn)
	db, err := sqldb.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO schema_version (version, applied_at) VALUES (?, ?)`, 99, "2030-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if _, err := store.Open(context.Background(), dsn, store.DurabilityNormal); err == nil ||
		!strings.Contains(err.Error(), "schema is version 99, newer than this kernel's 9") {
		t.Fatalf("Open on a newer schema = %v, want a refusal naming versions 99 and 9", err)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&n); err != nil || n != 10 {
		t.Errorf("schema_version rows = %d, %v; want the 10 there were", n, err)
	}
}

// TestWatchedRecords: the records read or noted since the window began,
// with the versions the store holds, and those outstanding capabilities
// and open approvals depend on however long ago they were read; of every
// agent's tasks, or of one agent's (what its tasks read or hold).
func TestWatchedRecords(t *testing.T) {
	s := newStore(t)
	since := t0.Add(time.Hour)
	const authorised = agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED
	update(t, s, func(tx store.Tx) error {
		for task, agent := range map[string]string{"task-1": "agent-1", "task-2": "agent-2"} {
			if err := tx.BindTask(task, store.Task{ItemID: "CTR-1", Agent: agent}, t0); err != nil {
				return err
			}
		}
		for _, r := range []struct {
			key, version string
			at           time.Time
		}{{"C-old", "v1", t0}, {"C-new", "v2", since.Add(time.Minute)}, {"C-held", "v3", t0}, {"C-other", "v4", since.Add(time.Minute)}} {
			if err := tx.SetRecordVersion("claims", r.key, r.version, r.at); err != nil {
				return err
			}
		}
		for i, e := range []store.Evidence{
			{TaskID: "task-1", Source: "claims", RecordKey: "C-new", ReadAt: since.Add(time.Minute)},
			{TaskID: "task-1", Source: "claims", RecordKey: "C-new", ReadAt: since.Add(2 * time.Minute)},
			{TaskID: "task-1", Source: "claims", RecordKey: "C-old", ReadAt: t0},
			{TaskID: "task-2", Source: "claims", RecordKey: "C-other", ReadAt: since.Add(time.Minute)},
		} {
			e.ReceiptID, e.EnvelopeHash, e.StateVersion = fmt.Sprintf("evr-%d", i), "h", "v"
			if _, err := tx.InsertEvidence(e); err != nil {
				return err
			}
		}
		// Read before the window, but a capability still depends on it;
		// and one the store holds no version of. A capability past its
		// expiry, not yet marked expired, is no longer depended on.
		if err := tx.InsertCapability(capability("a", "task-1", "claims/C-held", authorised, since)); err != nil {
			return err
		}
		if err := tx.InsertCapability(capability("c", "task-1", "claims/C-lapsed", authorised, t0)); err != nil {
			return err
		}
		return tx.InsertCapability(capability("b", "task-1", "claims/C-unseen", authorised, since))
	})
	now := since.Add(time.Minute)
	for agent, want := range map[string][]store.Watched{
		"": {{Source: "claims", Key: "C-held", StateVersion: "v3"}, {Source: "claims", Key: "C-new", StateVersion: "v2"},
			{Source: "claims", Key: "C-other", StateVersion: "v4"}, {Source: "claims", Key: "C-unseen"}},
		"agent-1": {{Source: "claims", Key: "C-held", StateVersion: "v3"}, {Source: "claims", Key: "C-new", StateVersion: "v2"}, {Source: "claims", Key: "C-unseen"}},
		"agent-2": {{Source: "claims", Key: "C-other", StateVersion: "v4"}},
		"agent-9": {},
	} {
		view(t, s, func(tx store.Tx) error {
			got, err := tx.WatchedRecords(since, now, agent)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("WatchedRecords(%q) (-want +got):\n%s", agent, diff)
			}
			if agent == "" {
				return nil
			}
			// One record asked about is watched exactly when it is listed.
			for _, key := range []string{"C-old", "C-new", "C-held", "C-other", "C-unseen", "C-lapsed", "C-none"} {
				in := slices.ContainsFunc(want, func(w store.Watched) bool { return w.Key == key })
				if by, err := tx.WatchedBy(since, now, agent, "claims", key); err != nil || by != in {
					t.Errorf("WatchedBy(%s, claims/%s) = %v, %v; want %v", agent, key, by, err, in)
				}
			}
			return nil
		})
	}
}

// TestIdempotencyKeysUnindexed: the store keeps no index of idempotency
// keys, on either database (the kernel makes each key from its
// capability's identifier, which the primary key keeps unique): a
// capability whose key another has inserts, where an index would refuse
// it.
func TestIdempotencyKeysUnindexed(t *testing.T) {
	s := newStore(t)
	a := capability("a", "task-1", "claims_db/C-1", agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, t0.Add(time.Minute))
	b := capability("b", "task-1", "claims_db/C-1", agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, t0.Add(time.Minute))
	b.IdempotencyKey = a.IdempotencyKey
	update(t, s, func(tx store.Tx) error {
		if err := tx.InsertCapability(a); err != nil {
			return err
		}
		return tx.InsertCapability(b)
	})
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Capability("b")
		if err != nil || got.IdempotencyKey != a.IdempotencyKey {
			t.Errorf("capability b = %+v, %v", got, err)
		}
		return nil
	})
}

// TestJournalGrown: the checkpoint publisher waits on JournalGrown for a
// thousand entries; a commit short of the size it asks for must not wake
// it, the commit that reaches the size must, and a size already reached
// signals at once.
func TestJournalGrown(t *testing.T) {
	s := newStore(t)
	appendOne := func() {
		update(t, s, func(tx store.Tx) error {
			_, err := tx.Append(t0, "task.bind", "task-1", []byte("CTR-A"))
			return err
		})
	}
	signalled := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	appendOne()
	ch := s.JournalGrown(s.JournalSize() + 3)
	signalled(ch) // what the commit before left pending
	appendOne()
	appendOne()
	if signalled(ch) {
		t.Fatal("signalled two entries short of the size asked for")
	}
	appendOne()
	if !signalled(ch) {
		t.Fatal("not signalled when a commit reached the size asked for")
	}
	if signalled(ch) {
		t.Fatal("signalled twice for one size")
	}
	if !signalled(s.JournalGrown(s.JournalSize())) {
		t.Fatal("not signalled for a size already reached")
	}
}
