package action_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/ambitkernel/ambit/adapters/action"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

func openKeys(t *testing.T, path string) *action.Keys {
	t.Helper()
	db, err := sqldb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	k, err := action.OpenKeys(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyEntry(key string, at time.Time) action.Entry {
	return action.Entry{Key: key, CapabilityID: "cap-" + key, TaskID: "task-1", Tool: "transfer", CallHash: "h", EffectID: "eff-" + key, StartedAt: at}
}

// TestKeysLifeCycle walks a key through Started, Done and recorded, and
// checks that the table refuses what would give a key a second attempt.
func TestKeysLifeCycle(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) { testKeysLifeCycle(t, db.empty(t)) })
	}
}

func testKeysLifeCycle(t *testing.T, path string) {
	ctx := context.Background()
	k := openKeys(t, path)
	receipt := &receiptv1.Envelope{PayloadType: "ambit.receipt.v1.EffectReceipt", Payload: []byte("p"), KeyId: "action", Signature: []byte("s")}

	if _, found, err := k.Get(ctx, "k1"); found || err != nil {
		t.Fatalf("Get(unknown) = %v, %v", found, err)
	}
	if err := k.Check(ctx); err != nil {
		t.Errorf("Check of an empty table = %v", err)
	}
	if err := k.Start(ctx, keyEntry("k1", now)); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(ctx, keyEntry("k1", now)); !errors.Is(err, action.ErrKeyTaken) {
		t.Errorf("second Start = %v, want ErrKeyTaken", err)
	}
	started, _, err := k.Get(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	want := keyEntry("k1", now)
	want.State = action.Started
	if diff := cmp.Diff(want, started, protocmp.Transform()); diff != "" {
		t.Errorf("Started row (-want +got):\n%s", diff)
	}
	if err := k.Finish(ctx, "k1", receipt); err != nil {
		t.Fatal(err)
	}
	if err := k.Finish(ctx, "k1", receipt); !errors.Is(err, action.ErrNotStarted) {
		t.Errorf("second Finish = %v, want ErrNotStarted", err)
	}
	if err := k.Abandon(ctx, "k1", "eff-k1"); err != nil {
		t.Fatal(err)
	}
	done, found, err := k.Get(ctx, "k1")
	if err != nil || !found {
		t.Fatalf("Get after Abandon of a Done key = %v, %v; want it kept", found, err)
	}
	want.State, want.Receipt = action.Done, receipt
	if diff := cmp.Diff(want, done, protocmp.Transform()); diff != "" {
		t.Errorf("Done row (-want +got):\n%s", diff)
	}

	// Abandon removes a Started key; it can then start afresh.
	if err := k.Start(ctx, keyEntry("k2", now.Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := k.Abandon(ctx, "k2", "eff-other"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := k.Get(ctx, "k2"); !found {
		t.Error("another attempt's row was removed")
	}
	if err := k.Abandon(ctx, "k2", "eff-k2"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := k.Get(ctx, "k2"); found {
		t.Error("abandoned key still has a row")
	}

	// Done in a transaction, older than k1: listed first as unrecorded.
	err = k.Tx(ctx, func(tx *sql.Tx) error { return k.StartDone(ctx, tx, keyEntry("k3", now.Add(-time.Hour)), receipt) })
	if err != nil {
		t.Fatal(err)
	}
	err = k.Tx(ctx, func(tx *sql.Tx) error { return k.StartDone(ctx, tx, keyEntry("k3", now), receipt) })
	if !errors.Is(err, action.ErrKeyTaken) {
		t.Errorf("StartDone of a taken key = %v, want ErrKeyTaken", err)
	}
	if err := k.Start(ctx, keyEntry("k4", now)); err != nil { // Started: not listed
		t.Fatal(err)
	}
	unrecorded := func() []string {
		t.Helper()
		es, err := k.Unrecorded(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range es {
			keys = append(keys, e.Key)
		}
		return keys
	}
	if diff := cmp.Diff([]string{"k3", "k1"}, unrecorded()); diff != "" {
		t.Errorf("Unrecorded, oldest first (-want +got):\n%s", diff)
	}
	if err := k.MarkRecorded(ctx, "k3"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"k1"}, unrecorded()); diff != "" {
		t.Errorf("Unrecorded after marking (-want +got):\n%s", diff)
	}

	if err := k.Check(ctx); err != nil {
		t.Errorf("Check = %v", err)
	}
	// The rows survive a reopen.
	again := openKeys(t, path)
	if e, found, err := again.Get(ctx, "k3"); err != nil || !found || !e.Recorded || e.State != action.Done {
		t.Errorf("after reopen: %+v, %v, %v", e, found, err)
	}
}

// TestKeysCheck: a key table that cannot be read fails the health probe.
func TestKeysCheck(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			path := db.empty(t)
			k := openKeys(t, path)
			runSQL(t, path, `DROP TABLE ambit_effect_keys`)
			if err := k.Check(context.Background()); err == nil {
				t.Error("Check of a dropped table passed")
			}
		})
	}
}

// TestKeysStartRace has many writers race to start one key: exactly one
// wins.
func TestKeysStartRace(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) { testKeysStartRace(t, db.empty(t)) })
	}
}

func testKeysStartRace(t *testing.T, path string) {
	// Two handles on the database, as two processes would have.
	tables := []*action.Keys{openKeys(t, path), openKeys(t, path)}
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e := keyEntry("race", now)
			e.EffectID = fmt.Sprintf("eff-%d", i)
			errs[i] = tables[i%2].Start(context.Background(), e)
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, action.ErrKeyTaken):
			t.Errorf("Start = %v, want nil or ErrKeyTaken", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d starts won, want exactly 1", wins)
	}
}
