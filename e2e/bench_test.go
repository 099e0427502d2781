package e2e_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/e2e/cluster"
	"github.com/ambitkernel/ambit/e2e/demo"
	"github.com/ambitkernel/ambit/kernel/contract"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// benchClaims is how many distinct claims the loop benchmark can pay
// before it wraps around (a wrapped claim reads back as doubled, which
// costs the same).
const benchClaims = 20000

func benchSeed(ctx context.Context, claimsDB, receiptsDB string) error {
	if err := demo.Seed(ctx, claimsDB, receiptsDB); err != nil {
		return err
	}
	db, err := claims.Open(claimsDB)
	if err != nil {
		return err
	}
	defer db.Close()
	var data claims.Data
	for i := range benchClaims {
		data.Claims = append(data.Claims, claims.Claim{
			ClaimID: fmt.Sprintf("B-%05d", i), ClaimantID: claims.DemoClaimant, ReceiptTotal: "12.00",
			ReceiptDate: "2026-03-02", CostCentre: "CC-410", Salary: "x", MedicalNotes: "x", BankAccount: "x",
			DisciplinaryNotes: "x", RowVersion: 1,
		})
	}
	return claims.Seed(ctx, db, data)
}

// bindBenchTask binds a task whose contract allows as many refunds as the
// benchmark makes, without review, for any of employee-7's claims.
func bindBenchTask(ctx context.Context, gov kernelv1.GovernanceServiceClient, task string) error {
	c, err := contract.Profile("coupled")
	if err != nil {
		return err
	}
	c.Binding.TaskId = task
	c.Binding.StateVersion = "*"
	c.Binding.ValidUntil = timestamppb.New(time.Now().Add(24 * time.Hour))
	c.Action.MaxActions = 1 << 30
	c.Action.MaxCumulativeAmount = nil
	c.Action.ApprovalOver = proto.Clone(c.Action.MaxAmount).(*contractv1.Money)
	id := "ctr-" + task
	if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: &ledgerv1.CanonItem{
		CanonItemId: id, SourceOrigin: ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY, AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef: "bench", Scope: ledgerv1.Scope_SCOPE_TASK, Lifetime: ledgerv1.Lifetime_LIFETIME_TASK,
		PromotionState: ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED, ConflictState: ledgerv1.ConflictState_CONFLICT_STATE_NONE,
		Kind: ledgerv1.ItemKind_ITEM_KIND_CONTRACT, Contract: c,
	}}); err != nil {
		return err
	}
	if _, err := gov.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: id}); err != nil {
		return err
	}
	_, err = gov.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: task, ContractItemId: id, Agent: "agent"})
	return err
}

type figure struct {
	name          string
	conc          int
	ops           int
	elapsed       time.Duration
	p50, p99, avg time.Duration
}

func (f figure) perSec() float64 { return float64(f.ops) / f.elapsed.Seconds() }

// measure runs n calls of op over conc goroutines, closed loop, and
// reports throughput and latency percentiles.
func measure(b *testing.B, name string, conc int, op func(i int) error) figure {
	b.Helper()
	n := b.N
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	b.ResetTimer()
	start := time.Now()
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += conc {
				t0 := time.Now()
				if err := op(i); err != nil {
					errs <- err
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	var sum time.Duration
	for _, l := range lat {
		all = append(all, l...)
		for _, d := range l {
			sum += d
		}
	}
	slices.Sort(all)
	f := figure{name: name, conc: conc, ops: len(all), elapsed: elapsed,
		p50: all[len(all)/2], p99: all[min(len(all)-1, len(all)*99/100)], avg: sum / time.Duration(len(all))}
	b.ReportMetric(f.perSec(), "ops/s")
	b.ReportMetric(float64(f.p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(f.p99.Microseconds()), "p99-µs")
	return f
}

// BenchmarkNetworked measures SubmitProposal over gRPC with mutual TLS at
// concurrency 1, 16 and 64, and the whole read → propose → execute →
// readback loop, each beside a no-op call (a health check) over the same
// transport in the same run, and prints the ratios.
func BenchmarkNetworked(b *testing.B) {
	if os.Getenv("AMBIT_BENCH") == "" {
		b.Skip("set AMBIT_BENCH=1 (make bench) to start the four processes and measure")
	}
	durability := os.Getenv("AMBIT_BENCH_DURABILITY")
	c, k := startCluster(b, cluster.Options{Seed: benchSeed, Durability: durability})
	ctx := context.Background()
	if err := bindBenchTask(ctx, k.Governance, "bench"); err != nil {
		b.Fatal(err)
	}
	r, err := k.Evidence.Read(ctx, &evidencev1.ReadRequest{TaskId: "bench", Source: "claims_db", RecordKey: claims.DemoClaim1001, Fields: demo.ClaimFields})
	if err != nil {
		b.Fatal(err)
	}
	agentConn, err := c.Conn(ctx, c.KernelAgent, "agent")
	if err != nil {
		b.Fatal(err)
	}
	noop := healthpb.NewHealthClient(agentConn)
	submit := &agentv1.SubmitProposalRequest{TaskId: "bench", Purpose: "expense-refund",
		Action: demo.Refund(claims.DemoClaim1001, 1740, claims.DemoClaimant), Evidence: []*receiptv1.Envelope{r.GetSignedReceipt()}}

	var figs []figure
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("noop/c=%d", conc), func(b *testing.B) {
			figs = append(figs, measure(b, "noop", conc, func(int) error {
				_, err := noop.Check(ctx, &healthpb.HealthCheckRequest{})
				return err
			}))
		})
		b.Run(fmt.Sprintf("submit/c=%d", conc), func(b *testing.B) {
			figs = append(figs, measure(b, "submit", conc, func(int) error {
				d, err := k.Agent.SubmitProposal(ctx, submit)
				if err == nil && d.GetDecision().GetOutcome() != contractv1.Outcome_OUTCOME_ALLOW {
					err = fmt.Errorf("decision %v", d.GetDecision())
				}
				return err
			}))
		})
	}

	// The loop's bare hops: four agent calls and five adapter-to-kernel
	// calls, each a no-op over the same kind of connection.
	hopConns := []string{c.EvidenceAddr, c.KernelAdapter, c.KernelAdapter, c.KernelAgent, c.ActionAddr, c.KernelAdapter, c.KernelAdapter, c.VerifierAddr, c.KernelAdapter}
	ids := []string{"agent", "evidence", "evidence", "agent", "agent", "action", "action", "agent", "verifier"}
	hops := make([]healthpb.HealthClient, len(hopConns))
	for i, addr := range hopConns {
		var conn *grpc.ClientConn
		if conn, err = c.Conn(ctx, addr, ids[i]); err != nil {
			b.Fatal(err)
		}
		hops[i] = healthpb.NewHealthClient(conn)
	}
	b.Run("loop-hops/c=1", func(b *testing.B) {
		figs = append(figs, measure(b, "loop-hops", 1, func(int) error {
			for _, h := range hops {
				if _, err := h.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					return err
				}
			}
			return nil
		}))
	})
	b.Run("loop/c=1", func(b *testing.B) {
		figs = append(figs, measure(b, "loop", 1, func(i int) error {
			claim := fmt.Sprintf("B-%05d", i%benchClaims)
			r, err := k.Evidence.Read(ctx, &evidencev1.ReadRequest{TaskId: "bench", Source: "claims_db", RecordKey: claim, Fields: demo.ClaimFields})
			if err != nil {
				return err
			}
			a := demo.Refund(claim, 1200, claims.DemoClaimant)
			d, err := k.Agent.SubmitProposal(ctx, &agentv1.SubmitProposalRequest{TaskId: "bench", Purpose: "expense-refund", Action: a, Evidence: []*receiptv1.Envelope{r.GetSignedReceipt()}})
			if err != nil {
				return err
			}
			if d.GetCapability() == nil {
				return fmt.Errorf("decision %v", d.GetDecision())
			}
			var capab receiptv1.Capability
			if err := proto.Unmarshal(d.GetCapability().GetPayload(), &capab); err != nil {
				return err
			}
			eff, err := k.Action.Execute(ctx, &actionv1.ExecuteRequest{Capability: d.GetCapability(), Action: a, IdempotencyKey: capab.GetIdempotencyKey()})
			if err != nil {
				return err
			}
			_, err = k.Verifier.Verify(ctx, &verifierv1.VerifyRequest{Capability: d.GetCapability(), EffectReceipt: eff.GetSignedReceipt()})
			return err
		}))
	})
	printSummary(figs, durability)
}

func last(figs []figure, name string, conc int) (figure, bool) {
	for i := len(figs) - 1; i >= 0; i-- {
		if figs[i].name == name && figs[i].conc == conc {
			return figs[i], true
		}
	}
	return figure{}, false
}

func printSummary(figs []figure, durability string) {
	if durability == "" {
		durability = "full"
	}
	fmt.Printf("\nnetworked figures (mutual TLS on loopback, kernel store durability %s)\n", durability)
	fmt.Printf("%-12s %5s %10s %10s %10s | %-28s\n", "call", "conc", "ops/s", "p50", "p99", "vs no-op in the same run")
	for _, conc := range []int{1, 16, 64} {
		n, ok1 := last(figs, "noop", conc)
		s, ok2 := last(figs, "submit", conc)
		if !ok1 || !ok2 {
			continue
		}
		fmt.Printf("%-12s %5d %10.0f %10s %10s |\n", "no-op", conc, n.perSec(), n.p50, n.p99)
		fmt.Printf("%-12s %5d %10.0f %10s %10s | p50 %.2fx the no-op, throughput %.2fx\n", "decision", conc, s.perSec(), s.p50, s.p99,
			float64(s.p50)/float64(n.p50), s.perSec()/n.perSec())
	}
	if h, ok := last(figs, "loop-hops", 1); ok {
		if l, ok := last(figs, "loop", 1); ok {
			fmt.Printf("%-12s %5d %10.0f %10s %10s |\n", "9 bare hops", 1, h.perSec(), h.p50, h.p99)
			fmt.Printf("%-12s %5d %10.0f %10s %10s | p50 %.2fx the bare hops (%.0f%% beyond them)\n", "whole loop", 1, l.perSec(), l.p50, l.p99,
				float64(l.p50)/float64(h.p50), 100*(float64(l.p50)/float64(h.p50)-1))
		}
	}
}
