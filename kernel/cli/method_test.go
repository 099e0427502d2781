package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/cli"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/reach"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

// TestMinimizeWritesLoadableContract: the minimal contract minimize
// writes loads, has the reach the report states, is no wider than coupled
// (bar the untested expiry), and is a fixed point of the removal test.
func TestMinimizeWritesLoadableContract(t *testing.T) {
	file := filepath.Join(t.TempDir(), "minimal.yaml")
	out, err := run(t, "minimize", "--contract", "unrestricted", "--episodes", "seed", "--out", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "after:  Ω 13;") || !strings.Contains(out, "minimal contract written to "+file) {
		t.Errorf("report:\n%s", out)
	}
	c, err := contract.Load(file)
	if err != nil {
		t.Fatalf("the minimal contract does not load: %v", err)
	}
	inv, err := reach.Of(c)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Omega != 13 || c.GetContractId() != "unrestricted-minimal" {
		t.Errorf("loaded %s with Ω %d", c.GetContractId(), inv.Omega)
	}
	debt, err := run(t, "debt", "coupled", file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(debt, "routes added or widened") || !strings.Contains(debt, "limits relaxed (1)\n  binding.valid_until") {
		t.Errorf("the minimal contract widens coupled:\n%s", debt)
	}
	again, err := run(t, "minimize", "--contract", file, "--episodes", "seed")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again, "before: Ω 13;") || !strings.Contains(again, "after:  Ω 13;") {
		t.Errorf("the removal test found more to remove:\n%s", again)
	}
}

// TestDebtRecordPaysTheDebt: the record debt --format record writes is the
// one the ledger asks for: with it promoted, the widening is promoted.
func TestDebtRecordPaysTheDebt(t *testing.T) {
	out, err := run(t, "debt", "coupled", "evidence-plus-action", "--format", "record",
		"--item-id", "DEBT-1", "--old-ref", "CTR-coupled", "--new-ref", "CTR-wide", "--decision", "accepted")
	if err != nil {
		t.Fatal(err)
	}
	record := &ledgerv1.CanonItem{}
	if err := contract.Decode([]byte(out), record); err != nil {
		t.Fatalf("the record does not decode: %v", err)
	}
	item := func(id, profile, supersedes string) *ledgerv1.CanonItem {
		c, err := contract.Profile(profile)
		if err != nil {
			t.Fatal(err)
		}
		return &ledgerv1.CanonItem{CanonItemId: id, Kind: ledgerv1.ItemKind_ITEM_KIND_CONTRACT, Contract: c, SupersedesRef: supersedes,
			SourceOrigin: ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY, AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
			ProvenanceRef: "policy-repo:" + profile, Scope: ledgerv1.Scope_SCOPE_ORGANISATION, Lifetime: ledgerv1.Lifetime_LIFETIME_DURABLE}
	}
	auth := canon.Authorities{ledgerv1.Scope_SCOPE_ORGANISATION: {"policy-owner"}}
	t0 := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	s := &canon.State{}
	steps := []struct {
		tr   canon.Transition
		want error
	}{
		{canon.Transition{Kind: canon.Propose, Item: item("CTR-coupled", "coupled", "")}, nil},
		{canon.Transition{Kind: canon.Promote, ItemID: "CTR-coupled"}, nil},
		{canon.Transition{Kind: canon.Propose, Item: item("CTR-wide", "evidence-plus-action", "CTR-coupled")}, nil},
		{canon.Transition{Kind: canon.Promote, ItemID: "CTR-wide"}, canon.ErrContractionDebtUnpaid},
		{canon.Transition{Kind: canon.Propose, Item: record}, nil},
		{canon.Transition{Kind: canon.Promote, ItemID: "DEBT-1"}, nil},
		{canon.Transition{Kind: canon.Promote, ItemID: "CTR-wide"}, nil},
	}
	for i, st := range steps {
		st.tr.At, st.tr.Actor = t0.Add(time.Duration(i)*time.Minute), "policy-owner"
		if err := s.Apply(st.tr, auth); !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("step %d (%s): %v, want %v", i, st.tr.Kind, err, st.want)
		}
	}
}

func TestMethodErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"name\":\"x\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr error
		wantMsg string
	}{
		{"reach without a contract", []string{"reach"}, cli.ErrUsage, "CONTRACT"},
		{"reach of nothing known", []string{"reach", "no-such-profile"}, cli.ErrUsage, "neither a contract file nor a shipped profile"},
		{"reach in xml", []string{"reach", "--format", "xml", "coupled"}, cli.ErrUsage, "text, json or svg"},
		{"minimize without episodes", []string{"minimize", "--contract", "coupled"}, cli.ErrUsage, "--episodes"},
		{"minimize over unknown episodes", []string{"minimize", "--contract", "coupled", "--episodes", "nowhere.jsonl"}, nil, "nowhere.jsonl"},
		{"minimize over malformed episodes", []string{"minimize", "--contract", "coupled", "--episodes", bad}, nil, "line 1"},
		{"minimize at no time", []string{"minimize", "--contract", "coupled", "--episodes", "seed", "--now", "soon"}, cli.ErrUsage, "--now"},
		{"debt of one contract", []string{"debt", "coupled"}, cli.ErrUsage, "OLD and NEW"},
		{"debt record without refs", []string{"debt", "coupled", "unrestricted", "--format", "record"}, cli.ErrUsage, "--item-id"},
		{"debt record undecided", []string{"debt", "coupled", "unrestricted", "--format", "record", "--item-id", "D", "--old-ref", "A", "--new-ref", "B", "--decision", "maybe"},
			cli.ErrUsage, "accepted or refused"},
		{"debt record of a narrowing", []string{"debt", "unrestricted", "coupled", "--format", "record", "--item-id", "D", "--old-ref", "A", "--new-ref", "B", "--decision", "accepted"},
			nil, "no debt to record"},
		{"suite in xml", []string{"suite", "--format", "xml"}, cli.ErrUsage, "text, json, markdown or svg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
}

// TestGoldenSupportdesk pins reach, minimize and debt on the second
// domain's contract, examples/supportdesk/contract.yaml with its binding
// filled in, over the desk's own episodes (examples/supportdesk/
// episodes.jsonl, the calls of its story and of the injected message):
// the routes of the shipped contract, the minimal contract its episodes
// demonstrate, and the debt the shipped contract carries beyond that
// minimum. UPDATE_GOLDEN=1 rewrites them.
func TestGoldenSupportdesk(t *testing.T) {
	root := filepath.Join("..", "..")
	episodes := filepath.Join(root, "examples", "supportdesk", "episodes.jsonl")
	tmpl, err := os.ReadFile(filepath.Join(root, "examples", "supportdesk", "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Bound as the story binds it, valid for four hours from the instant
	// the episodes are evaluated at.
	filled := strings.Replace(string(tmpl), "task_id: TEMPLATE", "task_id: desk-task", 1)
	filled = strings.Replace(filled, "key: TEMPLATE", "key: T-501", 1)
	filled = strings.Replace(filled, `valid_until: "2030-01-01T00:00:00Z"`, `valid_until: "2030-01-01T04:00:00Z"`, 1)
	if strings.Contains(filled, "TEMPLATE") || !strings.Contains(filled, "2030-01-01T04:00:00Z") {
		t.Fatal("the template's binding changed shape; update this test")
	}
	dir := t.TempDir()
	desk, minimal := filepath.Join(dir, "supportdesk.yaml"), filepath.Join(dir, "minimal.yaml")
	if err := os.WriteFile(desk, []byte(filled), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "minimize", "--contract", desk, "--episodes", episodes, "--out", minimal); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"reach-supportdesk.txt", []string{"reach", desk}},
		{"reach-supportdesk.json", []string{"reach", "--format", "json", desk}},
		{"minimize-supportdesk.txt", []string{"minimize", "--contract", desk, "--episodes", episodes}},
		{"debt-supportdesk-minimal-supportdesk.txt", []string{"debt", minimal, desk, "--episodes", episodes}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			if err != nil {
				t.Fatalf("%v: %v", tt.args, err)
			}
			golden(t, tt.name, out)
		})
	}
}
