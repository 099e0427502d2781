package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	"github.com/ambitkernel/ambit/kernel/contract"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TestWideningNeedsDebtRecordOverGRPC applies coupling rule 4's debt rule
// through the governance listener of a running kernel: a contract that
// widens the task's canonical contract (a GBP 200 hard limit and cap
// instead of GBP 100) is refused at promotion, FailedPrecondition
// CONTRACTION_DEBT_UNPAID, and stays PROVISIONAL; the debt record
// `ambitctl debt OLD NEW --format record` writes is proposed and promoted,
// and then the widening is promoted; `ambitctl ledger at` lists both, and,
// at an instant before the widening, the widening as it was.
func TestWideningNeedsDebtRecordOverGRPC(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	gov := st.Gov
	e, _ := st.Example(demo.ExpenseRefund)
	old, err := demo.Contract(e, "debt-task", demo.Claim1001, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ref := demo.ProvenanceRef(e, old)
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: demo.ContractItem("CTR-old", ref, old)}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "CTR-old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: "debt-task", ContractItemId: "CTR-old", Agent: st.Agents[0]}); err != nil {
		t.Fatal(err)
	}
	wide := proto.CloneOf(old)
	wide.Version = "2"
	wide.Action.MaxAmount = &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 20000}
	wide.Action.MaxCumulativeAmount = &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 20000}
	item := demo.ContractItem("CTR-wide", ref, wide)
	item.SupersedesRef = "CTR-old"
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: item}); err != nil {
		t.Fatal(err)
	}

	_, err = gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "CTR-wide"})
	if !refusedWith(err, codes.FailedPrecondition, errorv1.ErrorReason_ERROR_REASON_CONTRACTION_DEBT_UNPAID) {
		t.Fatalf("promoting the widening without a debt record: %v (%s), want FailedPrecondition CONTRACTION_DEBT_UNPAID", err, client.Reason(err))
	}
	if c := classOf(t, st, "CTR-wide"); c != "PROVISIONAL" {
		t.Errorf("after the refusal CTR-wide is %s, want PROVISIONAL", c)
	}
	beforeWidening := time.Now()

	// The record, as a policy owner writes it: ambitctl debt over both
	// contracts' files.
	dir := t.TempDir()
	files := map[string]*contractv1.Contract{"old.json": old, "wide.json": wide}
	for name, c := range files {
		js, err := protojson.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), js, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := ambitctl(t, "debt", filepath.Join(dir, "old.json"), filepath.Join(dir, "wide.json"), "--format", "record",
		"--item-id", "DEBT-wide", "--old-ref", "CTR-old", "--new-ref", "CTR-wide", "--decision", "accepted",
		"--rationale", "cumulative and hard limits re-run on every shipped corpus")
	if err != nil {
		t.Fatalf("ambitctl debt: %v\n%s", err, out)
	}
	record := &ledgerv1.CanonItem{}
	if err := contract.Decode([]byte(out), record); err != nil {
		t.Fatalf("the record ambitctl wrote: %v\n%s", err, out)
	}
	if record.GetKind() != ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD || len(record.GetDebt().GetRelaxedLimits()) != 2 {
		t.Fatalf("the record: %v", record)
	}
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: record}); err != nil {
		t.Fatal(err)
	}
	// Proposed is not paid.
	_, err = gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "CTR-wide"})
	if !refusedWith(err, codes.FailedPrecondition, errorv1.ErrorReason_ERROR_REASON_CONTRACTION_DEBT_UNPAID) {
		t.Fatalf("promoting the widening beside a proposed record: %v, want CONTRACTION_DEBT_UNPAID", err)
	}
	if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "DEBT-wide"}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: "CTR-wide"}); err != nil {
		t.Fatalf("promoting the widening once its debt is paid: %v", err)
	}

	ledger := func(args ...string) map[string][2]string {
		t.Helper()
		out, err := ambitctl(t, append([]string{"ledger", "at"}, append(args, "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", devstack.PolicyOwner)...)...)
		if err != nil {
			t.Fatalf("ambitctl ledger at: %v\n%s", err, out)
		}
		rows := map[string][2]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) >= 3 {
				rows[f[0]] = [2]string{f[1], f[2]}
			}
		}
		return rows
	}
	now := ledger()
	if now["CTR-wide"] != [2]string{"CANONICAL", "CONTRACT"} || now["DEBT-wide"] != [2]string{"CANONICAL", "DEBT_RECORD"} {
		t.Errorf("ambitctl ledger at: CTR-wide %v, DEBT-wide %v; want both CANONICAL", now["CTR-wide"], now["DEBT-wide"])
	}
	then := ledger(beforeWidening.UTC().Format(time.RFC3339Nano))
	if then["CTR-wide"][0] != "PROVISIONAL" || then["CTR-old"][0] != "CANONICAL" {
		t.Errorf("ambitctl ledger at %s: CTR-old %v, CTR-wide %v; want CANONICAL and PROVISIONAL", beforeWidening.Format(time.RFC3339Nano), then["CTR-old"], then["CTR-wide"])
	}
	if _, ok := then["DEBT-wide"]; ok {
		t.Errorf("ambitctl ledger at %s lists DEBT-wide, proposed after that instant", beforeWidening.Format(time.RFC3339Nano))
	}
}

// classOf is an item's class now, as the governance API lists it.
func classOf(t *testing.T, st *stack, id string) string {
	t.Helper()
	resp, err := st.Gov.ListItems(testCtx(t), &kernelv1.ListItemsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range resp.GetItems() {
		if it.GetItem().GetCanonItemId() == id {
			return class(it)
		}
	}
	return "absent"
}
