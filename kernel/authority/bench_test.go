package authority_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/ambitkernel/ambit/kernel/authority"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// quietKernel starts a kernel without logging over w's store as it
// stands, and makes it w's.
func quietKernel(tb testing.TB, w *world) *authority.Kernel {
	tb.Helper()
	opts := w.options(w.st)
	opts.Log = zap.NewNop()
	k, err := authority.New(w.ctx, opts)
	if err != nil {
		tb.Fatal(err)
	}
	w.k = k
	return k
}

// benchKernel is a kernel without logging and a proposal it allows again
// and again: the task's contract grants as many refunds as a benchmark
// makes, none needing review.
func benchKernel(b *testing.B) (*world, *authority.Kernel, authority.Proposal) {
	w := newWorld(b)
	k := quietKernel(b, w)
	w.canonicalTask(task, func(c *contractv1.Contract) {
		c.Action.MaxActions = 1 << 30
		c.Action.MaxCumulativeAmount = nil
		c.Action.ApprovalOver = proto.Clone(c.Action.MaxAmount).(*contractv1.Money)
	})
	env, _ := w.read(task)
	return w, k, proposal(task, refund(1740, subject), env)
}

// callContext is a context that can be cancelled, as a gRPC call's is: the
// database driver watches such a context while a statement runs.
func callContext(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkSubmit decides ALLOW-able proposals in process, without the
// network: evidence lookup, fact derivation, evaluation, one signature
// for the capability and the decision receipt, and the journaled
// transaction. It shows where a networked decision's time
// goes beyond the transport.
func BenchmarkSubmit(b *testing.B) {
	_, k, p := benchKernel(b)
	ctx := callContext(b)
	b.ReportAllocs()
	for b.Loop() {
		d, err := k.Submit(ctx, p)
		if err != nil || d.GetCapability() == nil {
			b.Fatalf("%v %v", d, err)
		}
	}
}

// BenchmarkSubmitRequest is BenchmarkSubmit with a new request id on each
// proposal, as the MCP gateway sends them: the answer is kept for a
// repeat.
func BenchmarkSubmitRequest(b *testing.B) {
	_, k, p := benchKernel(b)
	ctx := callContext(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		p.RequestID = "req-" + strconv.Itoa(n)
		d, err := k.Submit(ctx, p)
		if err != nil || d.GetCapability() == nil || d.GetRepeated() {
			b.Fatalf("%v %v", d, err)
		}
	}
}

// BenchmarkSubmitParallel decides from 16 goroutines at once: the store
// group-commits their transactions.
func BenchmarkSubmitParallel(b *testing.B) {
	_, k, p := benchKernel(b)
	b.ReportAllocs()
	b.SetParallelism(8)
	ctx := callContext(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d, err := k.Submit(ctx, p); err != nil || d.GetCapability() == nil {
				b.Errorf("%v %v", d, err)
				return
			}
		}
	})
}
