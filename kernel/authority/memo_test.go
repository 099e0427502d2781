package authority

import (
	"strconv"
	"testing"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
)

// TestMemoForgetsOldest: a full memo forgets its oldest key for a new
// one, and remembering a key again neither moves nor replaces it.
func TestMemoForgetsOldest(t *testing.T) {
	m := newMemo[int](3)
	for i := range 3 {
		m.put(strconv.Itoa(i), i)
	}
	m.put("0", 99) // remembered already: kept as it was, still the oldest
	if v, ok := m.get("0"); !ok || v != 0 {
		t.Errorf("get(0) = %d, %v; want 0, true", v, ok)
	}
	m.put("3", 3)
	if _, ok := m.get("0"); ok {
		t.Error("the oldest key is still remembered past the memo's size")
	}
	for i := 1; i <= 3; i++ {
		if v, ok := m.get(strconv.Itoa(i)); !ok || v != i {
			t.Errorf("get(%d) = %d, %v; want %d, true", i, v, ok, i)
		}
	}
}

// TestRememberEvidenceBySize: a recorded receipt is kept decoded only up
// to maxRecordedPayload bytes of payload, so large records cannot fill
// memory.
func TestRememberEvidenceBySize(t *testing.T) {
	k := &Kernel{recorded: newMemo[recordedEvidence](maxRecorded)}
	r := &receiptv1.EvidenceReceipt{ReceiptId: "ev-1"}
	k.rememberEvidence(&receiptv1.Envelope{Payload: make([]byte, maxRecordedPayload)}, "small", r, "h")
	k.rememberEvidence(&receiptv1.Envelope{Payload: make([]byte, maxRecordedPayload+1)}, "large", r, "h")
	if e, ok := k.recorded.get("small"); !ok || e.receipt != r || e.hash != "h" {
		t.Errorf("a receipt of %d bytes was not kept: %v, %v", maxRecordedPayload, e, ok)
	}
	if _, ok := k.recorded.get("large"); ok {
		t.Errorf("a receipt of %d bytes was kept", maxRecordedPayload+1)
	}
}
