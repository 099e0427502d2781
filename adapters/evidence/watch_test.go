package evidence_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/ambitkernel/ambit/adapters/evidence"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
)

// patience bounds every wait for the watcher; nothing asserts how fast it
// is.
const patience = 10 * time.Second

// eventually polls cond until it holds, failing t after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// polling counts the watcher's passes: each starts with WatchedRecords.
type polling struct {
	*kernel
	mu     sync.Mutex
	passes int
}

func (p *polling) WatchedRecords(ctx context.Context, in *kernelv1.WatchedRecordsRequest, opts ...grpc.CallOption) (*kernelv1.WatchedRecordsResponse, error) {
	p.mu.Lock()
	p.passes++
	p.mu.Unlock()
	return p.kernel.WatchedRecords(ctx, in, opts...)
}

func (p *polling) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passes
}

// afterPasses waits until the watcher has made n more full passes.
func (p *polling) afterPasses(t *testing.T, n int) {
	t.Helper()
	// A pass in flight may have read the kernel before the caller's
	// change: one more pass than asked makes sure a whole pass follows it.
	target := p.count() + n + 1
	eventually(t, "watcher passes", func() bool { return p.count() >= target })
}

// watching starts the core's watcher until the end of the test.
func watching(t *testing.T, f *fixture) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.core.Watch(ctx, 20*time.Millisecond)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func TestWatchReportsStateChanges(t *testing.T) {
	dbPath, db := database(t)
	ts := ticketServer(t)
	cfgs := sqlSources(dbPath)
	cfgs["tickets"] = ticketSource(ts.URL)
	k := &polling{kernel: &kernel{}}
	f := newFixture(t, k, cfgs)
	// A read makes the kernel watch K-1 at the version read; the others
	// are records of tasks the kernel already watches, one of them of
	// another adapter's source.
	if _, err := f.core.Read(context.Background(), "agent-1", &evidencev1.ReadRequest{
		TaskId: "t", Source: "cases_db", RecordKey: "K-1", Purpose: "p", Fields: []string{"total"},
	}); err != nil {
		t.Fatal(err)
	}
	k.watch("cases_db", "K-2", "cases-v1")
	k.watch("cases_db", "K-3", "cases-v1")
	k.watch("tickets", "T-1", "ticket-v3")
	k.watch("elsewhere", "X-1", "v1")

	watching(t, f)
	k.afterPasses(t, 2)
	if _, _, reports := k.calls(); len(reports) != 0 {
		t.Fatalf("reports before any change: %v", reports)
	}

	exec(t, db, `UPDATE cases SET revision = 43, total = 18 WHERE case_id = 'K-1'`)
	exec(t, db, `DELETE FROM cases WHERE case_id = 'K-2'`)
	ts.set("T-1", map[string]any{"version": 4, "status": "closed"})
	want := []*kernelv1.ReportStateChangeRequest{
		{Source: "cases_db", RecordKey: "K-1", StateVersion: "cases-v43"},
		{Source: "cases_db", RecordKey: "K-2", StateVersion: ""}, // gone
		{Source: "tickets", RecordKey: "T-1", StateVersion: "ticket-v4"},
	}
	eventually(t, "three state changes reported", func() bool {
		_, _, reports := k.calls()
		return len(reports) >= len(want)
	})
	// Each change is reported once: the kernel now has the new versions.
	k.afterPasses(t, 2)
	_, _, reports := k.calls()
	// The changes land while a pass may be in flight, so one pass can see
	// some of them and the next the rest: the order of reports is not
	// fixed, their set is.
	slices.SortFunc(reports, func(a, b *kernelv1.ReportStateChangeRequest) int {
		return strings.Compare(a.GetSource()+"/"+a.GetRecordKey(), b.GetSource()+"/"+b.GetRecordKey())
	})
	for _, r := range reports {
		if r.GetObservedAt() == nil {
			t.Errorf("report of %s/%s says not when it was observed", r.GetSource(), r.GetRecordKey())
		}
	}
	if diff := cmp.Diff(want, reports, protocmp.Transform(),
		protocmp.IgnoreFields(&kernelv1.ReportStateChangeRequest{}, "observed_at")); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}

func TestWatchNeverReportsAnUnreadableRecordAsGone(t *testing.T) {
	ts := ticketServer(t)
	k := &polling{kernel: &kernel{}}
	f := newFixture(t, k, map[string]evidence.SourceConfig{"tickets": ticketSource(ts.URL)})
	k.watch("tickets", "T-1", "ticket-v3")
	watching(t, f)
	k.afterPasses(t, 1)
	ts.close()
	k.afterPasses(t, 3)
	if _, _, reports := k.calls(); len(reports) != 0 {
		t.Errorf("an unreadable record was reported: %v", reports)
	}
	found := false
	for _, e := range f.logs.All() {
		found = found || (e.Message == "watched record unreadable" && e.ContextMap()["record_key"] == "T-1")
	}
	if !found {
		t.Error("the unreadable record was not logged")
	}
}

func TestWatchSurvivesAKernelThatIsDown(t *testing.T) {
	dbPath, db := database(t)
	k := &polling{kernel: &kernel{watchErr: status.Error(codes.Unavailable, "connection refused")}}
	f := newFixture(t, k, sqlSources(dbPath))
	k.watch("cases_db", "K-1", "cases-v42")
	watching(t, f)
	k.afterPasses(t, 2)
	exec(t, db, `UPDATE cases SET revision = 43 WHERE case_id = 'K-1'`)
	// The kernel comes back: the change is reported at the next pass.
	k.kernel.mu.Lock()
	k.watchErr = nil
	k.kernel.mu.Unlock()
	eventually(t, "the change reported", func() bool {
		_, _, reports := k.calls()
		return len(reports) == 1 && reports[0].GetStateVersion() == "cases-v43"
	})
	logged := false
	for _, e := range f.logs.All() {
		logged = logged || e.Message == "watched records unavailable"
	}
	if !logged {
		t.Error("the failed poll was not logged")
	}
}

// TestCheckWatch: the watcher's health probe passes while the kernel
// answers its polls and for a kernel that is back within the grace, and
// fails, naming the cause, once the polls have failed for longer; one
// answered poll clears it.
func TestCheckWatch(t *testing.T) {
	dbPath, _ := database(t)
	k := &polling{kernel: &kernel{}}
	f := newFixture(t, k, sqlSources(dbPath))
	ctx := context.Background()
	if err := f.core.CheckWatch(ctx); err != nil {
		t.Fatalf("CheckWatch before any poll = %v", err)
	}
	watching(t, f)
	k.afterPasses(t, 1)
	setErr := func(err error) {
		k.kernel.mu.Lock()
		k.kernel.watchErr = err
		k.kernel.mu.Unlock()
	}
	setErr(status.Error(codes.ResourceExhausted, "grpc: received message larger than max"))
	k.afterPasses(t, 1)
	f.advance(time.Second) // within the grace (2 s at 20 ms a poll)
	if err := f.core.CheckWatch(ctx); err != nil {
		t.Errorf("CheckWatch a second into failing polls = %v, want nil", err)
	}
	f.advance(1500 * time.Millisecond)
	err := f.core.CheckWatch(ctx)
	if err == nil || !strings.Contains(err.Error(), "no change of a record read is reported") || status.Code(errors.Unwrap(err)) != codes.ResourceExhausted {
		t.Errorf("CheckWatch 2.5 s into failing polls = %v, want the failure named", err)
	}
	setErr(nil)
	k.afterPasses(t, 1)
	if err := f.core.CheckWatch(ctx); err != nil {
		t.Errorf("CheckWatch after an answered poll = %v", err)
	}
}

func TestCheckSources(t *testing.T) {
	dbPath, db := database(t)
	f := newFixture(t, &kernel{}, sqlSources(dbPath))
	if err := f.core.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v", err)
	}
	exec(t, db, `ALTER TABLE attachments RENAME TO attachments_old`)
	err := f.core.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "source attachments") || strings.Contains(err.Error(), "cases_db") {
		t.Errorf("Check with a table gone = %v, want an error naming only that source", err)
	}
	exec(t, db, `ALTER TABLE attachments_old RENAME TO attachments`)
	if err := f.core.Check(context.Background()); err != nil {
		t.Errorf("Check after the table is back = %v", err)
	}
}

// TestWatchReadsWhatABatchLeavesOut: the watcher reads an SQL source's
// watched records a few statements at a time, and reads one by one what
// such a read leaves out, so each record is judged as a read of it alone
// would: an integer key watched as "007" is the row 7, unchanged; a key
// that names two rows is unreadable, never gone; a deleted row is gone.
func TestWatchReadsWhatABatchLeavesOut(t *testing.T) {
	dbPath, db := database(t)
	exec(t, db, `CREATE TABLE numbers (n INTEGER, label TEXT, revision INTEGER NOT NULL);
		INSERT INTO numbers VALUES (7, 'seven', 1), (8, 'eight', 1), (8, 'again', 1)`)
	cfgs := sqlSources(dbPath)
	cfgs["numbers"] = evidence.SourceConfig{Provenance: "PROVENANCE_TRUSTED", SQL: &evidence.SQLSource{
		Database: dbPath, Table: "numbers", Key: "n", Subject: "label",
		StateVersion: `"n-v" + string(record.revision)`, Columns: []string{"n", "label", "revision"},
	}}
	k := &polling{kernel: &kernel{}}
	f := newFixture(t, k, cfgs)
	k.watch("cases_db", "K-1", "cases-v42")
	k.watch("cases_db", "K-2", "cases-v1")
	k.watch("numbers", "007", "n-v1")
	k.watch("numbers", "8", "n-v1")
	exec(t, db, `DELETE FROM cases WHERE case_id = 'K-2'`)
	watching(t, f)
	eventually(t, "K-2 reported gone", func() bool {
		_, _, reports := k.calls()
		return len(reports) > 0
	})
	k.afterPasses(t, 2)
	_, _, reports := k.calls()
	want := []*kernelv1.ReportStateChangeRequest{{Source: "cases_db", RecordKey: "K-2", StateVersion: ""}}
	if diff := cmp.Diff(want, reports, protocmp.Transform(), protocmp.IgnoreFields(&kernelv1.ReportStateChangeRequest{}, "observed_at")); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	found := false
	for _, e := range f.logs.All() {
		found = found || (e.Message == "watched record unreadable" && e.ContextMap()["record_key"] == "8")
	}
	if !found {
		t.Error("the key that names two rows was not logged unreadable")
	}
}
