package payments_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/ambitkernel/ambit/adapters/payments"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
)

func open(t *testing.T) (*payments.Ledger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payments.db")
	l, err := payments.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, path
}

func payment(id, key string) payments.Payment {
	return payments.Payment{
		PaymentID:      id,
		IdempotencyKey: key,
		CapabilityID:   "cap-1",
		TaskID:         "refund-claim-1001",
		ClaimID:        "C-1001",
		PayeeID:        "employee-7",
		Destination:    "claimant",
		Currency:       "GBP",
		AmountMinor:    1740,
		ExecutedAt:     time.Date(2026, 3, 2, 10, 0, 0, 123456789, time.UTC),
		Action: &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{
			ClaimId: "C-1001", PayeeId: "employee-7", ReasonCode: "approved-expense",
			Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: 1740},
		}}},
		Receipt: &receiptv1.Envelope{PayloadType: "ambit.receipt.v1.EffectReceipt", Payload: []byte("p"), KeyId: "action", Signature: []byte("s")},
	}
}

func TestInsertAndLookup(t *testing.T) {
	l, _ := open(t)
	ctx := context.Background()
	want := payment("pay-1", "idem-1")
	if err := l.Insert(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := l.ByKey(ctx, "idem-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("ByKey (-want +got):\n%s", diff)
	}
	if _, err := l.ByKey(ctx, "idem-2"); !errors.Is(err, payments.ErrNotFound) {
		t.Errorf("ByKey(unknown) = %v, want ErrNotFound", err)
	}
}

func TestInsertOncePerKey(t *testing.T) {
	l, _ := open(t)
	ctx := context.Background()
	if err := l.Insert(ctx, payment("pay-1", "idem-1")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    payments.Payment
	}{
		{"same key, new payment id", payment("pay-2", "idem-1")},
		{"same payment id, new key", payment("pay-1", "idem-2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := l.Insert(ctx, tt.p); !errors.Is(err, payments.ErrDuplicate) {
				t.Errorf("Insert = %v, want ErrDuplicate", err)
			}
		})
	}
	got, err := l.ByKey(ctx, "idem-1")
	if err != nil || got.PaymentID != "pay-1" {
		t.Errorf("ByKey after duplicates = %v, %v; want the first payment", got.PaymentID, err)
	}
}

// TestInsertRace has many writers race for one key: exactly one wins.
func TestInsertRace(t *testing.T) {
	l, _ := open(t)
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = l.Insert(ctx, payment(fmt.Sprintf("pay-%d", i), "idem-race")) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, payments.ErrDuplicate):
			t.Errorf("Insert = %v, want nil or ErrDuplicate", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d inserts won, want exactly 1", wins)
	}
}

func TestRecordedFlag(t *testing.T) {
	l, _ := open(t)
	ctx := context.Background()
	first := payment("pay-1", "idem-1")
	first.ExecutedAt = first.ExecutedAt.Add(-time.Minute)
	for _, p := range []payments.Payment{payment("pay-2", "idem-2"), first} {
		if err := l.Insert(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []string {
		t.Helper()
		ps, err := l.Unrecorded(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.PaymentID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"pay-1", "pay-2"}, ids()); diff != "" {
		t.Errorf("Unrecorded, oldest first (-want +got):\n%s", diff)
	}
	if err := l.MarkRecorded(ctx, "pay-1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pay-2"}, ids()); diff != "" {
		t.Errorf("Unrecorded after marking (-want +got):\n%s", diff)
	}
	got, err := l.ByKey(ctx, "idem-1")
	if err != nil || !got.Recorded {
		t.Errorf("ByKey(idem-1).Recorded = %v, %v; want true", got.Recorded, err)
	}
	if err := l.MarkRecorded(ctx, "pay-9"); !errors.Is(err, payments.ErrNotFound) {
		t.Errorf("MarkRecorded(unknown) = %v, want ErrNotFound", err)
	}
}

func TestReopenKeepsPayments(t *testing.T) {
	l, path := open(t)
	ctx := context.Background()
	if err := l.Insert(ctx, payment("pay-1", "idem-1")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := payments.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := l2.ByKey(ctx, "idem-1"); err != nil {
		t.Errorf("ByKey after reopen: %v", err)
	}
}
