package authority

import (
	"testing"

	"github.com/ambitkernel/ambit/kernel/memo"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
)

// TestRememberEvidenceBySize: a recorded receipt is kept decoded only up
// to maxRecordedPayload bytes of payload, so large records cannot fill
// memory.
func TestRememberEvidenceBySize(t *testing.T) {
	k := &Kernel{recorded: memo.New[recordedEvidence](maxRecorded)}
	r := &receiptv1.EvidenceReceipt{ReceiptId: "ev-1"}
	k.rememberEvidence(&receiptv1.Envelope{Payload: make([]byte, maxRecordedPayload)}, "small", r, "h")
	k.rememberEvidence(&receiptv1.Envelope{Payload: make([]byte, maxRecordedPayload+1)}, "large", r, "h")
	if e, ok := k.recorded.Get("small"); !ok || e.receipt != r || e.hash != "h" {
		t.Errorf("a receipt of %d bytes was not kept: %v, %v", maxRecordedPayload, e, ok)
	}
	if _, ok := k.recorded.Get("large"); ok {
		t.Errorf("a receipt of %d bytes was kept", maxRecordedPayload+1)
	}
}
