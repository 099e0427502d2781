package authority_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/testing/protocmp"
)

// snapshotWorld builds a ledger, takes a snapshot, and goes on past it
// with transitions whose rules read contracts the snapshot left out: a
// widening refused for its unpaid debt, the debt record, the promotion and
// supersession it allows, a handoff from the widened contract.
func snapshotWorld(t *testing.T) *world {
	w := newWorld(t)
	old := w.canonicalTask(task)
	w.canonicalTask("task-2")
	wide := w.proposeWidening(t, old)
	if _, err := w.k.BoundaryChange(w.ctx, agentName, task, "raise the limit"); err != nil {
		t.Fatal(err)
	}
	if err := w.k.Snapshot(w.ctx); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}

	w.clock.Advance(time.Minute)
	_, err := w.k.PromoteItem(w.ctx, owner, "CTR-wide")
	wantRefusal(t, err, authority.ErrStale, "CONTRACTION_DEBT_UNPAID")
	w.propose(debtItem(t, "DEBT-wide", old.Item, wide, ledgerv1.AssuranceDecision_ASSURANCE_DECISION_ACCEPTED))
	w.promote("DEBT-wide")
	w.promote("CTR-wide")
	if _, _, err := w.k.SupersedeItem(w.ctx, owner, old.Item.GetCanonItemId(), "CTR-wide"); err != nil {
		t.Fatal(err)
	}
	filter := &ledgerv1.HandoffFilter{Fields: []string{"claim_id"}, Sources: []string{claimsDB}, Tools: []string{"refund"}, Destinations: []string{"claimant"}, MaxActions: 1}
	if _, err := w.k.DeriveHandoff(w.ctx, owner, "CTR-wide", "CTR-child", filter, "task-child", "agent-2"); err != nil {
		t.Fatal(err)
	}
	w.promote("CTR-child")
	w.bind(task, "CTR-wide")
	return w
}

// items lists k's ledger now, and as a fresh fold of the whole journal
// classifies it.
func items(t *testing.T, w *world, k *authority.Kernel) (now, replayed []canon.Classified) {
	t.Helper()
	now, _, err := allItems(w.ctx, k, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	replayed, _, err = allItems(w.ctx, k, w.clock.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return now, replayed
}

// restarted starts another kernel over w's database, its options first
// changed by tune (when given) and its warnings kept, and lists its ledger
// beside a fresh replay of the whole journal.
func restarted(t *testing.T, w *world, tune func(*authority.Options)) (k *authority.Kernel, got, replayed []canon.Classified, logs *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	o := w.options(w.openStore())
	o.Log = zap.New(core)
	if tune != nil {
		tune(&o)
	}
	k, err := authority.New(w.ctx, o)
	if err != nil {
		t.Fatalf("authority.New: %v", err)
	}
	got, replayed = items(t, w, k)
	return k, got, replayed, logs
}

// likeReplay fails unless got is the ledger a full replay gives and the
// start warned of nothing.
func likeReplay(t *testing.T, got, replayed []canon.Classified, logs *observer.ObservedLogs) {
	t.Helper()
	if d := cmp.Diff(replayed, got, protocmp.Transform()); d != "" {
		t.Fatalf("started from the snapshot, the ledger differs from a full replay (-replay +snapshot):\n%s", d)
	}
	if logs.Len() != 0 {
		t.Errorf("warnings at start-up: %v", logs.All())
	}
}

// TestSnapshotRestart: a kernel started from the snapshot and the journal
// after it holds exactly the ledger a replay of the whole journal gives,
// contracts and classes alike, and decides on a task whose contract it
// loads on demand.
func TestSnapshotRestart(t *testing.T) {
	w := snapshotWorld(t)
	want, _ := items(t, w, w.k)

	k, got, replayed, logs := restarted(t, w, nil)
	likeReplay(t, got, replayed, logs)
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Fatalf("the restarted kernel's ledger differs from the running one's:\n%s", d)
	}
	w.k = k
	env, _ := w.read(task)
	if d := w.submit(proposal(task, refund(1740, subject), env)); d.GetCapability() == nil {
		t.Fatalf("no capability after the restart: %+v", verdictOf(d))
	}
	if err := k.Close(w.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestSnapshotMismatch: a snapshot that does not match the journal or the
// kernel is ignored with a warning, and the kernel replays the journal.
func TestSnapshotMismatch(t *testing.T) {
	cases := []struct {
		name   string
		tamper string
		auth   bool
	}{
		{"corrupt body", `UPDATE ledger_snapshot_chunks SET body = ?`, false},
		{"missing chunk", `DELETE FROM ledger_snapshot_chunks`, false},
		{"another journal", `UPDATE ledger_snapshots SET root = ?`, false},
		{"newer than the journal", `UPDATE ledger_snapshots SET journal_size = journal_size + 1000`, false},
		{"other authorities", ``, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := snapshotWorld(t)
			_, want := items(t, w, w.k)
			if c.tamper != "" {
				db, err := sqldb.Open(w.path)
				if err != nil {
					t.Fatal(err)
				}
				var args []any
				if strings.Contains(c.tamper, "?") {
					args = append(args, []byte("not what was written"))
				}
				if _, err := db.Exec(c.tamper, args...); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			_, got, _, logs := restarted(t, w, func(o *authority.Options) {
				if c.auth {
					o.Authorities[ledgerv1.Scope_SCOPE_WORKSPACE] = []string{owner}
				}
			})
			if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
				t.Fatalf("the ledger differs from a full replay:\n%s", d)
			}
			if logs.FilterMessage("ledger snapshot ignored").Len() == 0 {
				t.Errorf("no warning that the snapshot was ignored: %v", logs.All())
			}
		})
	}
}

// TestSnapshotsInTheBackground: every SnapshotEvery transitions a snapshot
// is written beside the transitions, and Close writes the last, from which
// the next start folds nothing.
func TestSnapshotsInTheBackground(t *testing.T) {
	w := newWorld(t)
	o := w.options(w.st)
	o.SnapshotEvery = 2
	k, err := authority.New(w.ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	w.k = k
	for _, id := range []string{"a", "b", "c"} {
		w.canonicalTask("task-" + id)
	}
	if err := k.Close(w.ctx); err != nil {
		t.Fatal(err)
	}
	snaps, err := w.st.LedgerSnapshots(w.ctx, 10)
	if err != nil || len(snaps) == 0 {
		t.Fatalf("snapshots %v, %v; want some", snaps, err)
	}
	var last int64
	for _, e := range w.entries() {
		if e.Kind == "canon" {
			last = e.Seq
		}
	}
	t.Logf("%d snapshots", len(snaps))
	if snaps[0].JournalSize != uint64(last) {
		t.Errorf("the newest snapshot is at %d, the last transition at %d", snaps[0].JournalSize, last)
	}
	_, got, replayed, logs := restarted(t, w, nil)
	likeReplay(t, got, replayed, logs)
}

// TestSnapshotsOfReplicas: kernel replicas sharing one PostgreSQL database
// write snapshots at once, each of the ledger it follows; a kernel started
// later takes whichever is newest and folds the rest.
func TestSnapshotsOfReplicas(t *testing.T) {
	w := newWorldAt(t, pgtest.Database(t))
	b := w.newKernel(w.openStore())
	w.canonicalTask(task)
	if _, err := b.ProposeItem(w.ctx, owner, contractItem("CTR-b", coupledContract(t, "task-b"))); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, k := range []*authority.Kernel{w.k, b} {
		go func() { errs <- k.Snapshot(w.ctx) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
	}
	if _, err := b.PromoteItem(w.ctx, owner, "CTR-b"); err != nil {
		t.Fatal(err)
	}
	_, got, replayed, logs := restarted(t, w, nil)
	likeReplay(t, got, replayed, logs)
}

// TestSnapshotThatDoesNotFold: a snapshot that matches the journal's root
// but whose facts the journal after it contradicts (here: a snapshot at
// the empty journal that already holds another contract under the first
// item's id) is dropped for a full replay, not a refusal to start.
func TestSnapshotThatDoesNotFold(t *testing.T) {
	w := newWorld(t)
	w.canonicalTask(task)
	_, want := items(t, w, w.k)

	o := w.options(w.st)
	bogus := &canon.State{}
	other := contractItem("CTR-"+task, coupledContract(t, "another-task"))
	if err := bogus.Apply(canon.Transition{Kind: canon.Propose, At: start, Actor: owner, Item: other}, o.Authorities); err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if err := bogus.Snapshot().WriteTo(&body, o.Authorities); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.WriteLedgerSnapshot(w.ctx, 0, journal.EmptyRoot(), start, &body); err != nil {
		t.Fatal(err)
	}
	_, got, _, logs := restarted(t, w, nil)
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Fatalf("the ledger differs from a full replay:\n%s", d)
	}
	if logs.FilterMessage("the journal does not fold onto the ledger snapshot; replaying the whole journal").Len() != 1 {
		t.Errorf("no warning of the fallback: %v", logs.All())
	}
}
