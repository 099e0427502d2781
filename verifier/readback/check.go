package readback

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/money"
)

// Row is one payment as the verifier read it from the ledger.
type Row struct {
	PaymentID      string
	IdempotencyKey string
	CapabilityID   string
	ClaimID        string
	PayeeID        string
	Destination    string
	Currency       string
	AmountMinor    int64
}

// Check compares the ledger with the effect the capability binds.
// rowsForKey are the payments under the capability's idempotency key;
// rowsForClaim are all payments for the bound refund's claim (under any
// key). The status is VERIFIED exactly when there are no findings:
//
//   - the effect receipt names the capability, its idempotency key, task,
//     destination and exactly its action;
//   - exactly one payment exists for the key, and exactly one for the claim
//     (a second payment for the claim under another key is a doubled
//     refund);
//   - that payment's claim, payee, amount, currency and destination are the
//     bound ones, it was made under this capability, and its payment id is
//     the effect receipt's record_ref.
func Check(capability *receiptv1.Capability, effect *receiptv1.EffectReceipt, rowsForKey, rowsForClaim []Row) (receiptv1.ReadbackStatus, []string) {
	var findings []string
	add := func(format string, args ...any) { findings = append(findings, fmt.Sprintf(format, args...)) }

	// The effect receipt must describe the capability's effect.
	if effect.GetCapabilityId() != capability.GetCapabilityId() {
		add("effect receipt names capability %s, not %s", effect.GetCapabilityId(), capability.GetCapabilityId())
	}
	if effect.GetIdempotencyKey() != capability.GetIdempotencyKey() {
		add("effect receipt idempotency key %s differs from the capability's %s", effect.GetIdempotencyKey(), capability.GetIdempotencyKey())
	}
	if effect.GetTaskId() != capability.GetTaskId() {
		add("effect receipt task %s differs from the capability's %s", effect.GetTaskId(), capability.GetTaskId())
	}
	if effect.GetDestination() != capability.GetDestination() {
		add("effect receipt destination %s differs from the capability's %s", effect.GetDestination(), capability.GetDestination())
	}
	if !proto.Equal(effect.GetAction(), capability.GetAction()) {
		add("effect receipt action differs from the capability's")
	}

	key := capability.GetIdempotencyKey()
	switch len(rowsForKey) {
	case 0:
		add("no payment found for idempotency key %s", key)
	case 1:
	default:
		add("%d payments found for idempotency key %s", len(rowsForKey), key)
	}

	bound := capability.GetAction().GetRefund()
	if bound == nil {
		add("capability binds no refund")
	}
	for _, row := range rowsForKey {
		prefix := ""
		if len(rowsForKey) > 1 {
			prefix = "payment " + row.PaymentID + ": "
		}
		for _, f := range compareRow(row, bound, capability, effect) {
			findings = append(findings, prefix+f)
		}
	}

	if bound != nil {
		ids := make(map[string]bool, len(rowsForClaim))
		for _, r := range rowsForClaim {
			ids[r.PaymentID] = true
		}
		switch len(ids) {
		case 0:
			add("no payment found for claim %s", bound.GetClaimId())
		case 1:
		default:
			add("%d payments found for claim %s", len(ids), bound.GetClaimId())
		}
	}

	if len(findings) > 0 {
		return receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH, findings
	}
	return receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED, nil
}

// compareRow lists how one payment differs from the bound effect.
func compareRow(row Row, bound *contractv1.Refund, capability *receiptv1.Capability, effect *receiptv1.EffectReceipt) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if bound != nil {
		if row.ClaimID != bound.GetClaimId() {
			add("claim %s differs from the bound %s", row.ClaimID, bound.GetClaimId())
		}
		if row.PayeeID != bound.GetPayeeId() {
			add("payee %s differs from the bound %s", row.PayeeID, bound.GetPayeeId())
		}
		got := money.New(row.Currency, row.AmountMinor)
		if row.Currency != bound.GetAmount().GetCurrencyCode() || row.AmountMinor != bound.GetAmount().GetMinorUnits() {
			add("amount %s differs from the bound %s", money.Format(got), money.Format(bound.GetAmount()))
		}
	}
	if row.Destination != capability.GetDestination() {
		add("destination %s differs from the bound %s", row.Destination, capability.GetDestination())
	}
	if row.CapabilityID != capability.GetCapabilityId() {
		add("payment %s was made under capability %s, not %s", row.PaymentID, row.CapabilityID, capability.GetCapabilityId())
	}
	if row.PaymentID != effect.GetRecordRef() {
		add("payment %s is not the effect receipt's record_ref %s", row.PaymentID, effect.GetRecordRef())
	}
	return out
}
