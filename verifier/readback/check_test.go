package readback_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/verifier/readback"
)

func refund(claim, payee string, minor int64) *contractv1.Action {
	return &contractv1.Action{Kind: &contractv1.Action_Refund{Refund: &contractv1.Refund{
		ClaimId: claim, PayeeId: payee, ReasonCode: "approved-expense",
		Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: minor},
	}}}
}

func capability() *receiptv1.Capability {
	return &receiptv1.Capability{
		CapabilityId: "cap-1", TaskId: "refund-claim-1001", Action: refund("C-1001", "employee-7", 1740),
		Destination: "claimant", IdempotencyKey: "idem-1",
	}
}

func effect() *receiptv1.EffectReceipt {
	return &receiptv1.EffectReceipt{
		ReceiptId: "eff-1", CapabilityId: "cap-1", TaskId: "refund-claim-1001", IdempotencyKey: "idem-1",
		Action: refund("C-1001", "employee-7", 1740), Destination: "claimant", RecordRef: "pay-1",
	}
}

func row() readback.Row {
	return readback.Row{
		PaymentID: "pay-1", IdempotencyKey: "idem-1", CapabilityID: "cap-1", ClaimID: "C-1001",
		PayeeID: "employee-7", Destination: "claimant", Currency: "GBP", AmountMinor: 1740,
	}
}

func TestCheck(t *testing.T) {
	mismatch := receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH
	verified := receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED
	with := func(mut func(*readback.Row)) readback.Row {
		r := row()
		mut(&r)
		return r
	}
	tests := []struct {
		name         string
		capability   func(*receiptv1.Capability)
		effect       func(*receiptv1.EffectReceipt)
		forKey       []readback.Row
		forClaim     []readback.Row
		wantStatus   receiptv1.ReadbackStatus
		wantFindings []string
	}{
		{
			name:       "verified",
			forKey:     []readback.Row{row()},
			forClaim:   []readback.Row{row()},
			wantStatus: verified,
		},
		{
			name:         "row missing",
			wantStatus:   mismatch,
			wantFindings: []string{"no payment found for idempotency key idem-1", "no payment found for claim C-1001"},
		},
		{
			name:         "altered amount",
			forKey:       []readback.Row{with(func(r *readback.Row) { r.AmountMinor = 1741 })},
			forClaim:     []readback.Row{with(func(r *readback.Row) { r.AmountMinor = 1741 })},
			wantStatus:   mismatch,
			wantFindings: []string{"amount GBP 17.41 differs from the bound GBP 17.40"},
		},
		{
			name:         "altered currency",
			forKey:       []readback.Row{with(func(r *readback.Row) { r.Currency = "EUR" })},
			forClaim:     []readback.Row{with(func(r *readback.Row) { r.Currency = "EUR" })},
			wantStatus:   mismatch,
			wantFindings: []string{"amount EUR 17.40 differs from the bound GBP 17.40"},
		},
		{
			name:         "altered payee",
			forKey:       []readback.Row{with(func(r *readback.Row) { r.PayeeID = "employee-9" })},
			forClaim:     []readback.Row{with(func(r *readback.Row) { r.PayeeID = "employee-9" })},
			wantStatus:   mismatch,
			wantFindings: []string{"payee employee-9 differs from the bound employee-7"},
		},
		{
			name:         "altered destination",
			forKey:       []readback.Row{with(func(r *readback.Row) { r.Destination = "other_customer" })},
			forClaim:     []readback.Row{with(func(r *readback.Row) { r.Destination = "other_customer" })},
			wantStatus:   mismatch,
			wantFindings: []string{"destination other_customer differs from the bound claimant"},
		},
		{
			name:       "paid on another claim",
			forKey:     []readback.Row{with(func(r *readback.Row) { r.ClaimID = "C-1002" })},
			wantStatus: mismatch,
			wantFindings: []string{
				"claim C-1002 differs from the bound C-1001",
				"no payment found for claim C-1001",
			},
		},
		{
			name:   "doubled: a second payment for the claim under another key",
			forKey: []readback.Row{row()},
			forClaim: []readback.Row{row(), with(func(r *readback.Row) {
				r.PaymentID, r.IdempotencyKey = "pay-2", "idem-2"
			})},
			wantStatus:   mismatch,
			wantFindings: []string{"2 payments found for claim C-1001"},
		},
		{
			name:         "the same row twice counts once",
			forKey:       []readback.Row{row()},
			forClaim:     []readback.Row{row(), row()},
			wantStatus:   verified,
			wantFindings: nil,
		},
		{
			name:         "wrong record_ref",
			effect:       func(e *receiptv1.EffectReceipt) { e.RecordRef = "pay-9" },
			forKey:       []readback.Row{row()},
			forClaim:     []readback.Row{row()},
			wantStatus:   mismatch,
			wantFindings: []string{"payment pay-1 is not the effect receipt's record_ref pay-9"},
		},
		{
			name:         "payment under another capability",
			forKey:       []readback.Row{with(func(r *readback.Row) { r.CapabilityID = "cap-0" })},
			forClaim:     []readback.Row{with(func(r *readback.Row) { r.CapabilityID = "cap-0" })},
			wantStatus:   mismatch,
			wantFindings: []string{"payment pay-1 was made under capability cap-0, not cap-1"},
		},
		{
			name: "two rows for the key, each compared",
			forKey: []readback.Row{row(), with(func(r *readback.Row) {
				r.PaymentID, r.AmountMinor = "pay-2", 1740
			})},
			forClaim:   []readback.Row{row(), with(func(r *readback.Row) { r.PaymentID = "pay-2" })},
			wantStatus: mismatch,
			wantFindings: []string{
				"2 payments found for idempotency key idem-1",
				"payment pay-2: payment pay-2 is not the effect receipt's record_ref pay-1",
				"2 payments found for claim C-1001",
			},
		},
		{
			name: "effect receipt for another capability",
			effect: func(e *receiptv1.EffectReceipt) {
				e.CapabilityId, e.IdempotencyKey, e.TaskId = "cap-2", "idem-2", "refund-claim-1002"
			},
			forKey:     []readback.Row{row()},
			forClaim:   []readback.Row{row()},
			wantStatus: mismatch,
			wantFindings: []string{
				"effect receipt names capability cap-2, not cap-1",
				"effect receipt idempotency key idem-2 differs from the capability's idem-1",
				"effect receipt task refund-claim-1002 differs from the capability's refund-claim-1001",
			},
		},
		{
			name:         "effect receipt with another action",
			effect:       func(e *receiptv1.EffectReceipt) { e.Action = refund("C-1001", "employee-7", 174000) },
			forKey:       []readback.Row{row()},
			forClaim:     []readback.Row{row()},
			wantStatus:   mismatch,
			wantFindings: []string{"effect receipt action differs from the capability's"},
		},
		{
			name:         "effect receipt with another destination",
			effect:       func(e *receiptv1.EffectReceipt) { e.Destination = "other_customer" },
			forKey:       []readback.Row{row()},
			forClaim:     []readback.Row{row()},
			wantStatus:   mismatch,
			wantFindings: []string{"effect receipt destination other_customer differs from the capability's claimant"},
		},
		{
			name: "every discrepancy is reported",
			forKey: []readback.Row{with(func(r *readback.Row) {
				r.AmountMinor, r.PayeeID, r.PaymentID = 99999, "employee-9", "pay-x"
			})},
			forClaim:   []readback.Row{with(func(r *readback.Row) { r.PaymentID = "pay-x" }), row()},
			wantStatus: mismatch,
			wantFindings: []string{
				"payee employee-9 differs from the bound employee-7",
				"amount GBP 999.99 differs from the bound GBP 17.40",
				"payment pay-x is not the effect receipt's record_ref pay-1",
				"2 payments found for claim C-1001",
			},
		},
		{
			name: "capability binds no refund",
			capability: func(c *receiptv1.Capability) {
				c.Action = &contractv1.Action{Kind: &contractv1.Action_EmailAttachment{EmailAttachment: &contractv1.EmailAttachment{Recipient: "x@example"}}}
			},
			effect: func(e *receiptv1.EffectReceipt) {
				e.Action = &contractv1.Action{Kind: &contractv1.Action_EmailAttachment{EmailAttachment: &contractv1.EmailAttachment{Recipient: "x@example"}}}
			},
			forKey:       []readback.Row{row()},
			wantStatus:   mismatch,
			wantFindings: []string{"capability binds no refund"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, e := capability(), effect()
			if tt.capability != nil {
				tt.capability(c)
			}
			if tt.effect != nil {
				tt.effect(e)
			}
			gotStatus, gotFindings := readback.Check(c, e, tt.forKey, tt.forClaim)
			if gotStatus != tt.wantStatus {
				t.Errorf("status = %v, want %v", gotStatus, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantFindings, gotFindings); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckNilInputs: nothing to compare is a mismatch, never a panic.
func TestCheckNilInputs(t *testing.T) {
	status, findings := readback.Check(nil, nil, nil, nil)
	if status != receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH || len(findings) == 0 {
		t.Errorf("Check(nil...) = %v %v, want a mismatch", status, findings)
	}
}
