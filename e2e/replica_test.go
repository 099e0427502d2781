package e2e_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/e2e/chaos"
	"github.com/ambitkernel/ambit/examples/demo"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
	"google.golang.org/protobuf/proto"
)

// replicaFiguresEnv prints the replica test's figures to standard output
// (make replicas), not only to the test log.
const replicaFiguresEnv = "AMBIT_REPLICA_FIGURES"

// TestKernelReplicas runs two kernel processes on one PostgreSQL database
// behind the sidecars, which dial both.
//
// Agents run full refund and desk loops through both replicas while the
// second is killed with SIGKILL at random times and at the kernel's
// failpoints, and restarted: the audit finds every intended effect once,
// each with its receipt in the journal, nothing doubled, nothing lost, no
// open commitment, and the shared journal verifies against the first
// replica's checkpoints.
//
// Then an agent that reaches only the second replica gets REVIEW for the
// desk's irreversible close; the approval decided on the first replica is
// honoured by the second. The capability it then grants, redeemed at
// once through both replicas' adapter listeners, is redeemed once.
func TestKernelReplicas(t *testing.T) {
	dsn := pgtest.Database(t)
	st := startStack(t, devstack.Options{Agents: 3, CapabilityTTL: chaosCapabilityTTL, Database: dsn, KernelReplicas: 2},
		demo.ExpenseRefund, demo.Supportdesk)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if len(st.KernelReplicas) != 2 || st.KernelReplicas[0] != st.Kernel || st.KernelReplicas[1].Agent == st.Kernel.Agent {
		t.Fatalf("stack.json replicas: %+v", st.KernelReplicas)
	}

	// Loops under load while the second replica is killed.
	o := chaos.Options{RefundLoops: 160, DeskLoops: 40, Workers: 6, Seed: 3, Processes: []string{devstack.KernelReplica(2)},
		MinGap: 200 * time.Millisecond, MaxGap: 700 * time.Millisecond, FailpointWait: 5 * time.Second,
		LoopTimeout: 2 * time.Minute, CapabilityTTL: chaosCapabilityTTL}
	rep, err := chaos.Run(ctx, st.Stack, o)
	if err != nil {
		t.Fatal(err)
	}

	// An agent of the second replica alone.
	second, err := client.Dial(ctx, pki.IdentityDir(st.PKI, st.Agents[0]), st.Agents[0], client.Addresses{
		Kernel: st.KernelReplicas[1].Agent, Evidence: st.Evidence, Action: st.Action, Verifier: st.Verifier,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	e, _ := st.Example(demo.Supportdesk)
	if _, err := demo.Bind(ctx, st.Gov, e, "close-task", demo.Ticket501, st.Agents[0], time.Now()); err != nil {
		t.Fatal(err)
	}
	ev, err := second.Read(ctx, "close-task", demo.DeskPurpose, "tickets", demo.Ticket501, demo.TicketFields...)
	if err != nil {
		t.Fatal(err)
	}
	closing := client.Proposal{Task: "close-task", Purpose: demo.DeskPurpose, Tool: "close_ticket",
		Args: map[string]any{"ticket_id": demo.Ticket501}, Evidence: []*client.Evidence{ev}}
	d, err := second.Propose(ctx, closing)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Review() || !slices.Equal(d.Codes(), []string{"IRREVERSIBLE_APPROVAL_REQUIRED"}) || d.GetApprovalId() == "" {
		t.Fatalf("second replica: %v %v (approval %q), want REVIEW [IRREVERSIBLE_APPROVAL_REQUIRED]", d.GetDecision().GetOutcome(), d.Codes(), d.GetApprovalId())
	}
	conn, err := st.Conn(ctx, st.KernelReplicas[0].Governance, devstack.Governance)
	if err != nil {
		t.Fatal(err)
	}
	gov := kernelv1.NewGovernanceServiceClient(conn)
	// The first replica lists the approval the second asked for, from the
	// shared store.
	pending, err := gov.ListApprovals(ctx, &kernelv1.ListApprovalsRequest{Limit: 1})
	if err != nil || len(pending.GetApprovals()) != 1 || pending.GetApprovals()[0].GetApprovalId() != d.GetApprovalId() || pending.GetNextAfterApprovalId() != "" {
		t.Fatalf("pending approvals on the first replica: %v, %v; want %s alone", pending, err, d.GetApprovalId())
	}
	if _, err := gov.DecideApproval(ctx, &kernelv1.DecideApprovalRequest{ApprovalId: d.GetApprovalId(), Approve: true}); err != nil {
		t.Fatalf("approve on the first replica: %v", err)
	}
	approved, err := gov.ListApprovals(ctx, &kernelv1.ListApprovalsRequest{State: kernelv1.ApprovalState_APPROVAL_STATE_APPROVED})
	if err != nil || len(approved.GetApprovals()) != 1 || approved.GetApprovals()[0].GetApprovalId() != d.GetApprovalId() {
		t.Fatalf("approved approvals: %v, %v; want %s", approved, err, d.GetApprovalId())
	}
	closing.ApprovalID = d.GetApprovalId()
	d, err = second.Propose(ctx, closing)
	if err != nil || !d.Allowed() {
		t.Fatalf("second replica, approved on the first: %v %v, %v; want ALLOW", d.GetDecision().GetOutcome(), d.Codes(), err)
	}

	// Redeemed through both replicas at once, as the action adapter would.
	var firsts []bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		k := st.KernelReplicas[i%2]
		wg.Go(func() {
			conn, err := st.Conn(ctx, k.Adapter, devstack.Action)
			if err != nil {
				t.Error(err)
				return
			}
			r, err := kernelv1.NewAdapterServiceClient(conn).RedeemCapability(ctx, &kernelv1.RedeemCapabilityRequest{
				Capability: proto.CloneOf(d.GetCapability()), IdempotencyKey: d.GetIdempotencyKey(), Holder: st.Agents[0]})
			if err != nil {
				t.Errorf("redeem through %s: %v", k.Adapter, err)
				return
			}
			mu.Lock()
			firsts = append(firsts, r.GetFirst())
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := len(slices.DeleteFunc(slices.Clone(firsts), func(f bool) bool { return !f })); n != 1 {
		t.Errorf("%d of %d redemptions through two replicas were first, want exactly 1", n, len(firsts))
	}
	// The action adapter carries the redeemed capability through: one
	// effect, read back.
	eff, err := second.Execute(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Verify(ctx, d, eff); err != nil {
		t.Fatal(err)
	}

	reportChaos(ctx, t, st, rep, os.Getenv(replicaFiguresEnv) != "")
	if t.Failed() {
		for _, name := range []string{devstack.KernelReplica(1), devstack.KernelReplica(2)} {
			log, _ := os.ReadFile(st.LogPath(name))
			for _, line := range bytes.Split(log, []byte("\n")) {
				if bytes.Contains(line, []byte(`"level":"error"`)) || bytes.Contains(line, []byte(`refused`)) {
					t.Logf("%s: %s", name, line)
				}
			}
		}
	}
	// Both replicas decided.
	for _, name := range []string{devstack.KernelReplica(1), devstack.KernelReplica(2)} {
		log, err := os.ReadFile(st.LogPath(name))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(log, []byte(`"msg":"decision"`)); n == 0 {
			t.Errorf("%s made no decision", name)
		} else {
			t.Logf("%s: %d decisions logged", name, n)
		}
	}
}
