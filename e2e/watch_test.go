package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// TestStateChangeSeenAmongManyWatched: with more records watched than fit
// in gRPC's default 4 MiB message (records another adapter's source
// holds, seen within the window, written into the kernel's store as many
// reads would leave them), the evidence adapter still hears the whole
// list on each poll and reports the change behind an outstanding
// capability, which the kernel revokes.
func TestStateChangeSeenAmongManyWatched(t *testing.T) {
	st := startStack(t, devstack.Options{WatchInterval: 200 * time.Millisecond})
	ctx := testCtx(t)
	_, _ = allowed(t, st, "task-many")
	const many = 60_000
	db, err := sqldb.Open(st.KernelDB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")
	version := strings.Repeat("v", 40)
	// Prepared once, not parsed for each of 120,000 rows: under the race
	// detector on a busy machine the inserts alone once outlasted the
	// test's deadline.
	records, err := tx.PrepareContext(ctx, `INSERT INTO records (source, record_key, state_version, seen_at) VALUES ('elsewhere', ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	reads, err := tx.PrepareContext(ctx, `INSERT INTO evidence (receipt_id, task_id, envelope_hash, source, record_key, state_version, read_at) VALUES (?, 'task-many', 'h', 'elsewhere', ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range many {
		key := fmt.Sprintf("record-%060d", i)
		if _, err := records.ExecContext(ctx, key, version, seen); err != nil {
			t.Fatal(err)
		}
		// The same reads by the task's agent, for an adapter that serves
		// that agent alone.
		if _, err := reads.ExecContext(ctx, fmt.Sprintf("ev-many-%d", i), key, version, seen); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := demo.EditClaim(ctx, st.DataDir, demo.Claim1001, "19.40"); err != nil {
		t.Fatal(err)
	}
	c := awaitCommitmentMoved(t, st, "task-many", 20*time.Second)
	if c.GetStatus() != agentv1.CommitmentStatus_COMMITMENT_STATUS_REVOKED {
		t.Fatalf("with %d records watched, after the edit the commitment is %v (%q), want REVOKED", many, c.GetStatus(), c.GetNote())
	}
}
