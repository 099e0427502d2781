package gateway_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/adapters/gateway"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

func receipt(n int) *receiptv1.Envelope {
	return &receiptv1.Envelope{PayloadType: "ambit.receipt.v1.EvidenceReceipt", Payload: []byte(fmt.Sprintf("ev-%d", n)), KeyId: "evidence"}
}

func payloads(envs []*receiptv1.Envelope) []string {
	var out []string
	for _, e := range envs {
		out = append(out, string(e.GetPayload()))
	}
	return out
}

// TestSessionCites keeps the newest reads first and at most as many as a
// proposal may cite.
func TestSessionCites(t *testing.T) {
	var s gateway.Session
	if got := s.Cited(); len(got) != 0 {
		t.Fatalf("a new session cites %v", payloads(got))
	}
	for i := 1; i <= 20; i++ {
		s.Add(receipt(i))
	}
	var want []string
	for i := 20; i > 20-gateway.MaxCited; i-- {
		want = append(want, fmt.Sprintf("ev-%d", i))
	}
	if diff := cmp.Diff(want, payloads(s.Cited())); diff != "" {
		t.Errorf("cited (-want +got):\n%s", diff)
	}
}

// TestSessionConcurrent races reads that add receipts against proposals
// that cite them.
func TestSessionConcurrent(t *testing.T) {
	var s gateway.Session
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				s.Add(receipt(w*1000 + i))
				if n := len(s.Cited()); n == 0 || n > gateway.MaxCited {
					t.Errorf("%d receipts cited", n)
				}
			}
		})
	}
	wg.Wait()
	if n := len(s.Cited()); n != gateway.MaxCited {
		t.Errorf("%d receipts kept, want %d", n, gateway.MaxCited)
	}
}

func TestRequestID(t *testing.T) {
	parse := func(tool, args string) *toolcall.Call {
		c, err := toolcall.Parse(tool, args)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	refund := parse("refund", `{"claim_id": "C-1001", "amount": {"currency_code": "GBP", "minor_units": 1740}}`)
	base := gateway.RequestID("task-1", refund, "", 0, []*receiptv1.Envelope{receipt(1), receipt(2)})
	if !strings.HasPrefix(base, "mcp-") || len(base) > 128 {
		t.Fatalf("request id %q: want mcp-… of at most 128 characters (the kernel's bound)", base)
	}
	for _, tc := range []struct {
		name string
		id   string
		same bool
	}{
		{"the same call again", gateway.RequestID("task-1", refund, "", 0, []*receiptv1.Envelope{receipt(1), receipt(2)}), true},
		{"the same arguments written differently",
			gateway.RequestID("task-1", parse("refund", `{"amount":{"minor_units":1740,"currency_code":"GBP"},"claim_id":"C-1001"}`), "", 0, []*receiptv1.Envelope{receipt(1), receipt(2)}), true},
		{"another task", gateway.RequestID("task-2", refund, "", 0, []*receiptv1.Envelope{receipt(1), receipt(2)}), false},
		{"another amount", gateway.RequestID("task-1", parse("refund", `{"claim_id": "C-1001", "amount": {"currency_code": "GBP", "minor_units": 1741}}`), "", 0,
			[]*receiptv1.Envelope{receipt(1), receipt(2)}), false},
		{"another tool with the same arguments", gateway.RequestID("task-1", parse("credit", refund.Canonical()), "", 0, []*receiptv1.Envelope{receipt(1), receipt(2)}), false},
		{"the next round", gateway.RequestID("task-1", refund, "", 1, []*receiptv1.Envelope{receipt(1), receipt(2)}), false},
		{"with an approval", gateway.RequestID("task-1", refund, "apr-1", 0, []*receiptv1.Envelope{receipt(1), receipt(2)}), false},
		{"a new read", gateway.RequestID("task-1", refund, "", 0, []*receiptv1.Envelope{receipt(3), receipt(1), receipt(2)}), false},
		{"fewer reads", gateway.RequestID("task-1", refund, "", 0, []*receiptv1.Envelope{receipt(1)}), false},
		{"no reads", gateway.RequestID("task-1", refund, "", 0, nil), false},
		{"the approval id moved into the task", gateway.RequestID("task-1apr-1", refund, "", 0, []*receiptv1.Envelope{receipt(1), receipt(2)}), false},
		{"after a refused capability", gateway.AfterRefusal(base, "cap-1"), false},
		{"after another refused capability", gateway.AfterRefusal(base, "cap-2"), false},
	} {
		if got := tc.id == base; got != tc.same {
			t.Errorf("%s: same id %v, want %v", tc.name, got, tc.same)
		}
	}
	// A call proposed afresh after a refusal repeats its new proposal on
	// a retry, and differs by the capability refused.
	if a, b := gateway.AfterRefusal(base, "cap-1"), gateway.AfterRefusal(base, "cap-1"); a != b || a == gateway.AfterRefusal(base, "cap-2") || len(a) > 128 {
		t.Errorf("AfterRefusal(base, cap-1) = %q then %q", a, b)
	}
}
