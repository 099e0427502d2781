package envelope_test

import (
	"testing"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
)

// BenchmarkSign seals a decision's two records as the kernel did before
// batches (two signatures) and as it does now (one for the pair), and one
// record a call from 16 goroutines at once, which the signer batches.
func BenchmarkSign(b *testing.B) {
	_, priv := keys(b)
	s := envelope.NewSigner("kernel", priv)
	c := &receiptv1.Capability{CapabilityId: "cap-0194f6a1c2e3a1b2c3d4e5f6", DecisionId: "dec-0194f6a1c2e3a1b2c3d4e5f7", TaskId: "CLM-1001", IdempotencyKey: "idem-0194f6a1c2e3a1b2c3d4e5f8", Holder: "agent"}
	dr := &receiptv1.DecisionReceipt{DecisionId: "dec-0194f6a1c2e3a1b2c3d4e5f7", TaskId: "CLM-1001", Agent: "agent", CapabilityId: "cap-0194f6a1c2e3a1b2c3d4e5f6"}
	b.Run("pair/each-alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Sign(c); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Sign(dr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pair/together", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.SignAll(c, dr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one/16-goroutines", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Sign(dr); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
