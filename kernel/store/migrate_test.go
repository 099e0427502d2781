package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"google.golang.org/protobuf/proto"
)

// databaseAt is a new SQLite database as a kernel of schema version left
// it: its path, and a connection to fill it through.
func databaseAt(t *testing.T, version int) (string, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(ctx, db, false, version); err != nil {
		t.Fatal(err)
	}
	return path, db
}

// insertCapabilityRow writes a capability of task-1 for 1740 GBP straight
// into the table, as an older kernel would have.
func insertCapabilityRow(t *testing.T, db *sql.DB, id string, status int, issued, expires time.Time) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO capabilities (`+capabilityColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, "dec-"+id, "task-1", "claims/C-1", "v1", "idem-"+id, "refund", "GBP", 1740, status, "", "", "", ts(issued), ts(expires), "", "h", "agent"); err != nil {
		t.Fatal(err)
	}
}

// startOn closes the older kernel's connection to the database at path
// and opens the store on it, as a newer kernel starts.
func startOn(t *testing.T, path string, db *sql.DB) *Store {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path, DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMigrateToVersion3 opens a database a version-2 kernel wrote: its
// capabilities, usage and journal survive the rebuild of their tables, the
// ledger's entries are still read back by kind, and through the index
// that now holds them alone.
func TestMigrateToVersion3(t *testing.T) {
	ctx := context.Background()
	path, db := databaseAt(t, 2)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, e := range []struct{ kind, ref string }{{"canon", "CTR-1"}, {"decision", "dec-1"}, {"canon", "CTR-2"}, {"capability", "cap-1"}} {
		if _, err := journal.Append(ctx, db, at, e.kind, e.ref, []byte(e.ref)); err != nil {
			t.Fatal(err)
		}
	}
	insertCapabilityRow(t, db, "cap-1", 1, at, at.Add(time.Hour))
	if _, err := db.Exec(`INSERT INTO task_usage (task_id, currency, actions, amount_minor) VALUES ('task-1', 'GBP', 1, 1740)`); err != nil {
		t.Fatal(err)
	}
	var indexNames0 []string
	s := startOn(t, path, db)
	defer func() {
		// A later start keeps the schema as the migration left it: an
		// index it dropped is not created again.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := Open(ctx, path, DurabilityNormal)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		if got := indexNames(t, again); !slices.Equal(got, indexNames0) {
			t.Errorf("indexes after a second start = %v, want those after the migration, %v", got, indexNames0)
		}
	}()
	var c Capability
	if err := s.View(ctx, func(tx Tx) error {
		var err error
		c, err = tx.Capability("cap-1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if c.TaskID != "task-1" || c.IdempotencyKey != "idem-cap-1" || c.AmountMinor != 1740 || !c.ExpiresAt.Equal(at.Add(time.Hour)) || c.Holder != "agent" {
		t.Errorf("capability after the migration = %+v", c)
	}
	if n, sum, err := s.Usage(ctx, "task-1", "GBP"); err != nil || n != 1 || sum != 1740 {
		t.Errorf("usage after the migration = %d, %d, %v; want 1, 1740", n, sum, err)
	}
	canon, err := s.EntriesOfKindAfter(ctx, journal.ReplayedKind, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(canon) != 2 || canon[0].Ref != "CTR-1" || canon[1].Ref != "CTR-2" {
		t.Errorf("canon entries after the migration = %+v, want CTR-1 and CTR-2", canon)
	}
	after, err := s.EntriesOfKindAfter(ctx, journal.ReplayedKind, 1, 0)
	if err != nil || len(after) != 1 || after[0].Ref != "CTR-2" {
		t.Errorf("canon entries after position 1 = %+v, %v; want CTR-2", after, err)
	}
	if decisions, err := s.EntriesOfKindAfter(ctx, "decision", 0, 0); err != nil || len(decisions) != 1 || decisions[0].Ref != "dec-1" {
		t.Errorf("decision entries = %+v, %v; want dec-1", decisions, err)
	}

	var ddl string
	if err := s.ro.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'capabilities'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(ddl, "WITHOUT ROWID") {
		t.Errorf("capabilities is %s, want a WITHOUT ROWID table", ddl)
	}
	indexes := indexNames(t, s)
	indexNames0 = indexes
	for _, want := range []string{"approvals_open", "capabilities_record", "capabilities_task", "evidence_read", "journal_ref", "journal_replayed", "records_seen", "tasks_agent", "tasks_item"} {
		if !strings.Contains(strings.Join(indexes, " "), want) {
			t.Errorf("indexes %v lack %s", indexes, want)
		}
	}
	if err := s.ro.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'capabilities_record'`).Scan(&ddl); err != nil || !strings.HasSuffix(ddl, isOutstanding) {
		t.Errorf("capabilities_record is %q (%v), want outstanding capabilities alone", ddl, err)
	}
	for _, gone := range []string{"journal_kind", "capabilities_outstanding"} {
		if slices.Contains(indexes, gone) {
			t.Errorf("indexes %v still hold %s", indexes, gone)
		}
	}
	// The condition journal.ReadKind writes for the ledger's kind.
	var plan strings.Builder
	prows, err := s.ro.Query(`EXPLAIN QUERY PLAN SELECT seq FROM journal WHERE kind = '` + journal.ReplayedKind + `' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for prows.Next() {
		var id, parent, unused int
		var detail string
		if err := prows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "; ")
	}
	prows.Close()
	if !strings.Contains(plan.String(), "journal_replayed") {
		t.Errorf("reading the ledger's entries plans %q, want the journal_replayed index", plan.String())
	}
}

// TestMigrateToVersion4 opens a database a version-3 kernel wrote, with
// one outstanding capability past its expiry and one redeemed, and usage
// counters that disagree with them: the two indexes by task become one by
// task, status, expiry, currency and amount; the first read of the task's
// due capabilities after the start finds the expired one in the table,
// though no mark was loaded at start-up; the counters' table is gone, and
// the task's usage is counted from its capabilities.
func TestMigrateToVersion4(t *testing.T) {
	ctx := context.Background()
	path, db := databaseAt(t, 3)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i, status := range []int{1, 2} {
		insertCapabilityRow(t, db, fmt.Sprintf("cap-%d", i+1), status, at, at.Add(time.Minute))
	}
	if _, err := db.Exec(`INSERT INTO task_usage (task_id, currency, actions, amount_minor) VALUES ('task-1', 'GBP', 7, 7000)`); err != nil {
		t.Fatal(err)
	}
	s := startOn(t, path, db)
	defer s.Close()
	indexes := indexNames(t, s)
	if slices.Contains(indexes, "capabilities_outstanding") {
		t.Errorf("indexes %v still hold capabilities_outstanding", indexes)
	}
	var ddl string
	if err := s.ro.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'capabilities_task'`).Scan(&ddl); err != nil || !strings.HasSuffix(ddl, "(task_id, status, expires_at, currency, amount_minor)") {
		t.Errorf("capabilities_task is %q (%v), want an index by task, status, expiry, currency and amount", ddl, err)
	}
	var tables int
	if err := s.ro.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'task_usage'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("task_usage tables = %d, %v; want none", tables, err)
	}
	// Both capabilities count (the redeemed one too): 2 actions, 3480.
	if n, sum, err := s.Usage(ctx, "task-1", "GBP"); err != nil || n != 2 || sum != 3480 {
		t.Errorf("usage after the start = %d, %d, %v; want 2, 3480 from the capabilities", n, sum, err)
	}
	err := s.Read(ctx, func(tx Tx) error {
		due, err := tx.Due("task-1", at.Add(time.Hour))
		if err != nil || len(due) != 1 || due[0].CapabilityID != "cap-1" {
			t.Errorf("due after the start = %+v, %v; want cap-1", due, err)
		}
		all, err := tx.Capabilities("task-1")
		if err != nil || len(all) != 2 {
			t.Errorf("the task's capabilities = %+v, %v; want both", all, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLookupsReadIndexes: the queries a watch poll, a revocation, a
// decision's expiry check, a supersession and a page of tasks run read
// only indexes of what they select. A scan of a whole table would cost
// each of them as much as the store's history.
func TestLookupsReadIndexes(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	queries := map[string]string{"seen": seenQuery, "seen by an agent": seenOfAgentQuery, "depended on, record by record": dependedStepsQuery, "depended on, in one pass": dependedScanQuery, "depended on, pending and approvals": dependedRestQuery, "versions of the records depended on": versionsQuery(3), "depended on by an agent": dependedOfAgentQuery, "watched by an agent": watchedByAgentQuery, "due": dueQuery, "earliest expiry": earliestQuery, "a task's capabilities": taskCapabilitiesQuery,
		"tasks of a contract": tasksBoundToQuery, "a page of tasks": tasksQuery("", ""), "a page of an agent's tasks": tasksQuery("agent", ""),
		"a page of a contract's tasks": tasksQuery("", "CTR-1"), "a page of an agent's tasks of a contract": tasksQuery("agent", "CTR-1"),
		"a page of approvals in a state": approvalsAfterQuery}
	for name, keys := range map[string][2]string{"outstanding on a record": {"claims/C-1", ""}, "outstanding of a task": {"", "task-1"}, "outstanding on both": {"claims/C-1", "task-1"}} {
		queries[name], _ = outstandingQuery(keys[0], keys[1])
	}
	partial := []string{"capabilities_record", "approvals_open"}
	for name, q := range queries {
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = "x"
		}
		rows, err := s.ro.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var steps []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, detail)
		}
		rows.Close()
		for _, step := range steps {
			// A search reads one range of an index. A scan reads all of
			// one: only a partial index, of what is open, may be read so,
			// and the capabilities waiting to move, which the mover keeps
			// to a tenth of a second's decisions (pending.go). (A SELECT
			// without FROM scans its one constant row, and a VALUES
			// list the rows it gives; the records that outstanding
			// capabilities depend on are scanned as the recursion d
			// finds them, each by a search.)
			if strings.HasPrefix(step, "SCAN ") && step != "SCAN CONSTANT ROW" && step != "SCAN capabilities_pending" && step != "SCAN d" &&
				!strings.HasSuffix(step, "-ROW VALUES CLAUSE") &&
				!slices.ContainsFunc(partial, func(ix string) bool { return strings.HasSuffix(step, "INDEX "+ix) }) {
				t.Errorf("%s reads a whole table or index: %q in %q", name, step, steps)
			}
		}
		if len(steps) == 0 {
			t.Errorf("%s: no plan", name)
		}
	}
}

// TestMigrateToVersion9 opens a database a version-8 kernel wrote, with
// outstanding capabilities on two records, one of them past its expiry:
// the index of outstanding capabilities by record now holds their expiry,
// and a watch poll lists the record whose capability has not expired.
func TestMigrateToVersion9(t *testing.T) {
	ctx := context.Background()
	path, db := databaseAt(t, 8)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	insertCapabilityRow(t, db, "cap-live", 1, now.Add(-time.Minute), now.Add(4*time.Minute))
	insertCapabilityRow(t, db, "cap-lapsed", 1, now.Add(-time.Hour), now.Add(-55*time.Minute))
	if _, err := db.Exec(`UPDATE capabilities SET record = 'claims/C-2' WHERE capability_id = 'cap-lapsed'`); err != nil {
		t.Fatal(err)
	}
	before := indexNames(t, &Store{ro: db})
	s := startOn(t, path, db)
	defer s.Close()
	if got := indexNames(t, s); !slices.Equal(got, before) {
		t.Errorf("indexes after the migration = %v, want %v", got, before)
	}
	var ddl string
	if err := s.ro.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'capabilities_record'`).Scan(&ddl); err != nil ||
		!strings.Contains(ddl, "(record, expires_at)") || !strings.HasSuffix(ddl, isOutstanding) {
		t.Errorf("capabilities_record is %q (%v), want outstanding capabilities by record and expiry", ddl, err)
	}
	err := s.View(ctx, func(tx Tx) error {
		w, err := tx.WatchedRecords(now, now, "")
		if err != nil {
			return err
		}
		if len(w) != 1 || w[0].Source != "claims" || w[0].Key != "C-1" {
			t.Errorf("watched after the migration = %+v, want claims/C-1 alone", w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// indexNames lists the database's own indexes, sorted.
func indexNames(t *testing.T, s *Store) []string {
	t.Helper()
	return column(t, s.ro, `SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
}

// column runs query on db and returns its rows' one column, as text.
func column(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// laterIndexes are the indexes of a database of version 5 to 7 with
// before, once migrated to the latest version that adds added: version 8
// replaced the index of journal refs with that of their tails.
func laterIndexes(before []string, added ...string) []string {
	out := slices.Clone(before)
	if i := slices.Index(out, "journal_ref"); i >= 0 {
		out[i] = "journal_ref_tail"
	}
	return slices.Sorted(slices.Values(append(out, added...)))
}

// TestOpenRefusesHashChain: a database holding the older kernel's hash
// chain is refused before anything is migrated in it.
func TestOpenRefusesHashChain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE journal (seq INTEGER PRIMARY KEY, recorded_at TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL, body BLOB NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, path, DurabilityNormal); !errors.Is(err, journal.ErrChain) {
		t.Fatalf("Open over a hash chain = %v, want ErrChain", err)
	}
	var tables int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'`).Scan(&tables); err != nil || tables != 1 {
		t.Errorf("tables after the refusal = %d, %v; want the journal alone", tables, err)
	}
}

// TestMigrateToVersion5 opens a database a version-4 kernel wrote: its
// capabilities survive the rebuild of their table, which no longer keeps
// an index of idempotency keys, and the indexes of version 4 are there.
func TestMigrateToVersion5(t *testing.T) {
	ctx := context.Background()
	path, db := databaseAt(t, 4)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i, status := range []int{1, 2} {
		insertCapabilityRow(t, db, fmt.Sprintf("cap-%d", i+1), status, at, at.Add(time.Minute))
	}
	before := indexNames(t, &Store{ro: db})
	var autoBefore int
	if err := db.QueryRow(`SELECT COUNT(*) FROM pragma_index_list('capabilities') WHERE origin = 'u'`).Scan(&autoBefore); err != nil || autoBefore != 1 {
		t.Fatalf("version 4's capabilities have %d unique indexes (%v), want the one of idempotency keys", autoBefore, err)
	}
	s := startOn(t, path, db)
	defer s.Close()
	// Version 6 adds approvals_state.
	want := laterIndexes(before, "approvals_state")
	if got := indexNames(t, s); !slices.Equal(got, want) {
		t.Errorf("indexes after the migration = %v, want version 4's and approvals_state: %v", got, want)
	}
	var unique int
	if err := s.ro.QueryRow(`SELECT COUNT(*) FROM pragma_index_list('capabilities') WHERE origin = 'u'`).Scan(&unique); err != nil || unique != 0 {
		t.Errorf("capabilities keep %d unique indexes (%v), want none", unique, err)
	}
	var withoutRowid int
	if err := s.ro.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'capabilities' AND sql LIKE '%WITHOUT ROWID'`).Scan(&withoutRowid); err != nil || withoutRowid != 1 {
		t.Errorf("capabilities are not kept in their primary key's b-tree (%v)", err)
	}
	err := s.Read(ctx, func(tx Tx) error {
		all, err := tx.Capabilities("task-1")
		if err != nil || len(all) != 2 || all[0].IdempotencyKey != "idem-cap-1" || all[1].Status != 2 {
			t.Errorf("the task's capabilities after the migration = %+v, %v", all, err)
		}
		due, err := tx.Due("task-1", at.Add(time.Hour))
		if err != nil || len(due) != 1 || due[0].CapabilityID != "cap-1" {
			t.Errorf("due after the migration = %+v, %v; want cap-1", due, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, sum, err := s.Usage(ctx, "task-1", "GBP"); err != nil || n != 2 || sum != 3480 {
		t.Errorf("usage after the migration = %d, %d, %v; want 2, 3480", n, sum, err)
	}
}

// TestMigrateToVersion6 opens a database a version-5 kernel wrote, with
// approvals in every state: they are listed a page of one state at a time
// through the new index, in their identifiers' order.
func TestMigrateToVersion6(t *testing.T) {
	ctx := context.Background()
	path, db := databaseAt(t, 5)
	states := []kernelv1.ApprovalState{
		kernelv1.ApprovalState_APPROVAL_STATE_PENDING, kernelv1.ApprovalState_APPROVAL_STATE_CONSUMED,
		kernelv1.ApprovalState_APPROVAL_STATE_PENDING, kernelv1.ApprovalState_APPROVAL_STATE_REJECTED,
		kernelv1.ApprovalState_APPROVAL_STATE_PENDING,
	}
	for i, st := range states {
		body, err := proto.Marshal(&kernelv1.Approval{ApprovalId: fmt.Sprintf("apr-%d", i), State: st})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO approvals (approval_id, task_id, decision_id, effect_hash, record, state, requested_at, body) VALUES (?, 'task-1', 'dec', 'hash', '', ?, '2026-03-01T09:00:00Z', ?)`,
			fmt.Sprintf("apr-%d", i), st, body); err != nil {
			t.Fatal(err)
		}
	}
	before := indexNames(t, &Store{ro: db})
	s := startOn(t, path, db)
	defer s.Close()
	want := laterIndexes(before, "approvals_state")
	if got := indexNames(t, s); !slices.Equal(got, want) {
		t.Errorf("indexes after the migration = %v, want %v", got, want)
	}
	err := s.Read(ctx, func(tx Tx) error {
		var pages [][]string
		for after := ""; ; {
			page, err := tx.ApprovalsAfter(kernelv1.ApprovalState_APPROVAL_STATE_PENDING, after, 2)
			if err != nil {
				return err
			}
			if len(page) == 0 {
				break
			}
			var ids []string
			for _, a := range page {
				ids = append(ids, a.Body.GetApprovalId())
			}
			pages, after = append(pages, ids), ids[len(ids)-1]
		}
		if fmt.Sprint(pages) != "[[apr-0 apr-2] [apr-4]]" {
			t.Errorf("pages of pending approvals = %v, want [[apr-0 apr-2] [apr-4]]", pages)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMigrateToVersion8 opens a database a version-7 kernel wrote: its
// journal's entries are found by ref as before, now through the index of
// ref tails, which replaced the index of whole refs; the head of the
// journal is unchanged.
func TestMigrateToVersion8(t *testing.T) {
	ctx := context.Background()
	path, db := databaseAt(t, 7)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	refs := []string{"cap-0193a1b2c3d4e5f6a7b8c9d0", "dec-0193a1b2c3d4e5f6a7b8c9d1", "CTR-task-01", "task-01", "ev-ABC", "00ff"}
	for _, ref := range refs {
		if _, err := journal.Append(ctx, db, at, "kind", ref, []byte("entry of "+ref)); err != nil {
			t.Fatal(err)
		}
	}
	head, err := journal.Head(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	before := indexNames(t, &Store{ro: db})
	if !slices.Contains(before, "journal_ref") {
		t.Fatalf("version 7's indexes = %v, want journal_ref among them", before)
	}
	s := startOn(t, path, db)
	defer s.Close()
	if got, want := indexNames(t, s), laterIndexes(before); !slices.Equal(got, want) {
		t.Errorf("indexes after the migration = %v, want %v", got, want)
	}
	for _, ref := range refs {
		es, err := journal.ReadRef(ctx, s.ro, ref)
		if err != nil || len(es) != 1 || string(es[0].Body) != "entry of "+ref {
			t.Errorf("ReadRef(%s) after the migration = %+v, %v; want its one entry", ref, es, err)
		}
	}
	if got := s.CommittedHead(); got.Size != head.Size || !bytes.Equal(got.Root, head.Root) {
		t.Errorf("head after the migration = %d %x, want %d %x", got.Size, got.Root, head.Size, head.Root)
	}
}
