package action_test

import (
	"fmt"
	"testing"
)

// BenchmarkExecute measures one first execution through each kind of
// executor, on SQLite files and loopback servers, with the in-test kernel.
func BenchmarkExecute(b *testing.B) {
	for _, tool := range []string{"transfer_here", "transfer", "notify", "issue_credit"} {
		b.Run(tool, func(b *testing.B) {
			tg, _, _ := newTargets(b)
			f := newFixture(b, &kernel{}, tg, options{})
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				key := fmt.Sprintf("k-%d", i)
				req := request(f.keys.capability(b, key, toolCall(tool, transferArgs)), key)
				b.StartTimer()
				if _, err := f.h.Execute(agentCtx(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
