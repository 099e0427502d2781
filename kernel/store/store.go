package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/logfile"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// ErrNotFound marks a missing row.
var ErrNotFound = errors.New("not found")

// ErrDuplicate marks a row whose key is taken: a request id answered
// already, found before its row reached SQLite, whose unique key would
// refuse it.
var ErrDuplicate = errors.New("already recorded")

// Durability selects how a commit reaches the disk (see sqldb.Durability).
type Durability = sqldb.Durability

// Durability levels. Full fsyncs every commit (survives power loss);
// normal survives a process crash but may lose the last commits on power
// loss.
const (
	DurabilityFull   = sqldb.DurabilityFull
	DurabilityNormal = sqldb.DurabilityNormal
)

// isOutstanding is the condition of a capability authorised and not yet
// redeemed, and isOpenApproval of an approval still to be used. Queries
// write them as literals, as the partial indexes on them do: PostgreSQL's
// generic plan of a prepared statement knows no bound value, so it could
// not use those indexes.
var (
	isOutstanding  = fmt.Sprintf("status = %d", agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED)
	isOpenApproval = fmt.Sprintf("state IN (%d, %d)", kernelv1.ApprovalState_APPROVAL_STATE_PENDING, kernelv1.ApprovalState_APPROVAL_STATE_APPROVED)
)

// capabilityTable is the capability row's columns and constraints as
// schema version 1 made them (capabilityTableV5 is the table now).
const capabilityTable = `
		capability_id       TEXT PRIMARY KEY,
		decision_id         TEXT NOT NULL,
		task_id             TEXT NOT NULL,
		record              TEXT NOT NULL,
		state_version       TEXT NOT NULL,
		idempotency_key     TEXT NOT NULL UNIQUE,
		tool                TEXT NOT NULL,
		currency            TEXT NOT NULL,
		amount_minor        INTEGER NOT NULL,
		status              INTEGER NOT NULL,
		effect_receipt_id   TEXT NOT NULL DEFAULT '',
		readback_receipt_id TEXT NOT NULL DEFAULT '',
		note                TEXT NOT NULL DEFAULT '',
		issued_at           TEXT NOT NULL,
		expires_at          TEXT NOT NULL,
		approval_id         TEXT NOT NULL DEFAULT '',
		effect_hash         TEXT NOT NULL DEFAULT '',
		holder              TEXT NOT NULL DEFAULT ''
`

// usageTable is the task usage row's columns and key.
const usageTable = `
		task_id      TEXT NOT NULL,
		currency     TEXT NOT NULL,
		actions      INTEGER NOT NULL,
		amount_minor INTEGER NOT NULL,
		PRIMARY KEY (task_id, currency)
`

var schema = []string{
	`CREATE TABLE IF NOT EXISTS tasks (
		task_id          TEXT PRIMARY KEY,
		contract_item_id TEXT NOT NULL,
		agent            TEXT NOT NULL,
		bound_at         TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS records (
		source        TEXT NOT NULL,
		record_key    TEXT NOT NULL,
		state_version TEXT NOT NULL,
		seen_at       TEXT NOT NULL,
		PRIMARY KEY (source, record_key)
	)`,
	`CREATE TABLE IF NOT EXISTS evidence (
		receipt_id    TEXT PRIMARY KEY,
		task_id       TEXT NOT NULL,
		envelope_hash TEXT NOT NULL,
		source        TEXT NOT NULL,
		record_key    TEXT NOT NULL,
		state_version TEXT NOT NULL,
		read_at       TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS capabilities (` + capabilityTable + `)`,
	// Answers to proposals submitted with a request id, so that a repeat
	// gets the first answer instead of a second decision.
	`CREATE TABLE IF NOT EXISTS requests (
		task_id    TEXT NOT NULL,
		request_id TEXT NOT NULL,
		agent      TEXT NOT NULL,
		call_hash  TEXT NOT NULL,
		response   BLOB NOT NULL,
		at         TEXT NOT NULL,
		PRIMARY KEY (task_id, request_id)
	)`,
	`CREATE INDEX IF NOT EXISTS capabilities_task ON capabilities (task_id)`,
	// Outstanding capabilities only: what Usage and revocation look at.
	`CREATE INDEX IF NOT EXISTS capabilities_outstanding ON capabilities (task_id, expires_at) WHERE status = 1`,
	// What each task's capabilities use up, kept with every status change
	// so that deciding costs the same in a task's thousandth action as in
	// its first.
	`CREATE TABLE IF NOT EXISTS task_usage (` + usageTable + `)`,
	`CREATE INDEX IF NOT EXISTS capabilities_record ON capabilities (record)`,
	`CREATE INDEX IF NOT EXISTS evidence_record ON evidence (source, record_key, read_at)`,
	`CREATE TABLE IF NOT EXISTS approvals (
		approval_id  TEXT PRIMARY KEY,
		task_id      TEXT NOT NULL,
		decision_id  TEXT NOT NULL,
		effect_hash  TEXT NOT NULL,
		record       TEXT NOT NULL,
		state        INTEGER NOT NULL,
		decided_by   TEXT NOT NULL DEFAULT '',
		note         TEXT NOT NULL DEFAULT '',
		requested_at TEXT NOT NULL,
		body         BLOB NOT NULL
	)`,
}

// Store is the kernel database.
type Store struct {
	// log and copies: an SQLite store at durability normal acknowledges
	// a batch whose updates ran no statement from its log file, and its
	// copier copies it into SQLite after (logged.go).
	log    *logfile.Log
	copies copying
	db     *sql.DB
	// ro reads committed state on connections of its own, so that long
	// reads (verifying or paging the journal, proofs) never hold the one
	// writing connection.
	ro *sql.DB
	// frontier is the journal's tree as the running batch sees it; only
	// the batch leader touches it. An error loading it is kept for the
	// first append, so that the start-up check reports a broken journal.
	frontier    *journal.Frontier
	frontierErr error
	// size is the journal's committed size; grown is signalled after a
	// commit that takes it to grownAt or beyond (see JournalGrown).
	size    atomic.Uint64
	grownAt atomic.Uint64
	grown   chan struct{}
	// stmts and roStmts cache the prepared statements of db and ro.
	stmts, roStmts *sqldb.Prepared
	// lookup reads SQLite for the writer alone, with a log file (see
	// loggedRequest), on lookupDB's one connection.
	lookup   *sqldb.Prepared
	lookupDB *sql.DB
	// versions and mirror follow an exclusive store's commits (see
	// optimistic.go).
	versions versions
	mirror   mirror

	mu      sync.Mutex
	pending []*job
	leading bool

	// checkpoints copies an SQLite store's write-ahead log into its
	// file, off the writer's path.
	checkpoints *checkpointer
	// mover moves pending capabilities, which moveDue says were stored
	// since its last move began (pending.go).
	mover   *background
	moveDue atomic.Bool
	// pendingStored counts the capabilities stored pending since the last
	// move began (moveAt wakes the mover).
	pendingStored atomic.Int64

	// pg is set for a PostgreSQL store, which other kernel replicas may
	// write too (see shared.go).
	pg *shared

	// committed, when set, hears of each commit (ObserveCommits).
	committed atomic.Pointer[func(Commit)]
}

// Commit is what one group commit took: the time of its COMMIT alone (the
// database writing the batch's pages and, at durability full, syncing
// them) and the updates it committed.
type Commit struct {
	Took    time.Duration
	Updates int
}

// ObserveCommits has f hear of every commit that stores updates, in the
// writer, after the commit and before its updates return: f must be quick
// (a metric's observation).
func (s *Store) ObserveCommits(f func(Commit)) { s.committed.Store(&f) }

// Open opens (creating if needed) the kernel database dsn: an SQLite file
// path (the embedded default), or a postgres:// URL that several kernel
// replicas may share.
func Open(ctx context.Context, dsn string, d Durability) (*Store, error) {
	if sqldb.IsPostgres(dsn) {
		return openPostgres(ctx, dsn, d)
	}
	return openSQLite(ctx, dsn, d)
}

func openSQLite(ctx context.Context, path string, d Durability) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", d.SQLitePragma())
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	// An update of a group commit that runs statements runs them in a
	// savepoint, whose undo journal would otherwise be a temporary file
	// written on every row.
	q.Add("_pragma", "temp_store(MEMORY)")
	// Checkpoints run in the background (checkpoint.go).
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", writerCheckpointPages))
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// SQLite has one writer; a single connection serialises transactions in
	// process instead of spinning on SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	if err := journal.CheckFormat(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := migrate(ctx, db, false); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	ro := url.Values{}
	ro.Add("_pragma", "busy_timeout(10000)")
	ro.Add("_pragma", "query_only(1)")
	rdb, err := sql.Open("sqlite", "file:"+path+"?"+ro.Encode())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(8)
	s, err := newStore(ctx, db, rdb, nil)
	if err != nil {
		return nil, err
	}
	if p := logPath(path); p != "" && s.frontierErr == nil {
		// At full a log left by a run at normal is copied all the same,
		// then left empty and closed.
		keep := d == DurabilityNormal
		if _, err := os.Stat(p); keep || err == nil {
			if err := s.openLog(ctx, p, d, keep); err != nil {
				return nil, errors.Join(fmt.Errorf("open store %s: %w", path, err), s.Close())
			}
		}
	}
	if s.log != nil {
		// The writer's own read connection, for the request ids it looks
		// up without a statement of its own (loggedRequest): it never
		// waits behind the readers' eight.
		ldb, err := sql.Open("sqlite", "file:"+path+"?"+ro.Encode())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("open store %s: %w", path, err), s.Close())
		}
		ldb.SetMaxOpenConns(1)
		s.lookupDB, s.lookup = ldb, sqldb.NewPrepared(ldb)
	}
	if s.checkpoints, err = startCheckpointer(dsn); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	if s.mover, err = startMover(ctx, s); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

func newStore(ctx context.Context, db, ro *sql.DB, pg *shared) (*Store, error) {
	s := &Store{db: db, ro: ro, grown: make(chan struct{}, 1), pg: pg}
	s.stmts, s.roStmts = sqldb.NewPrepared(db), sqldb.NewPrepared(ro)
	s.versions.seed = maphash.MakeSeed()
	s.frontier, s.frontierErr = journal.LoadFrontier(ctx, db)
	if s.frontierErr != nil {
		s.frontier = journal.NewFrontier()
	}
	s.size.Store(s.frontier.Size())
	head := s.frontier.Head()
	s.mirror.head.Store(&head)
	if pg == nil {
		s.mirror.start()
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if s.mover != nil {
		s.mover.close()
	}
	if s.log != nil {
		s.stopLog()
	}
	_ = s.stmts.Close()
	_ = s.roStmts.Close()
	var err error
	if s.pg != nil {
		err = s.pg.close()
	}
	if s.lookup != nil {
		_ = s.lookup.Close()
		err = errors.Join(err, s.lookupDB.Close())
	}
	if s.checkpoints != nil {
		err = errors.Join(err, s.checkpoints.close())
	}
	return errors.Join(err, s.ro.Close(), s.db.Close())
}

// maxBatch bounds how many updates share one commit.
const maxBatch = 128

// job is one Update waiting to run.
type job struct {
	ctx  context.Context
	fn   func(tx Tx) error
	done chan error
	lead chan struct{}
	// alone runs the job in a batch of its own, so that its commit hooks
	// run before any later update starts.
	alone bool
}

// Update runs fn in a write transaction and returns once its changes are
// committed (nil) or rolled back (fn's or the commit's error). Concurrent
// updates are group-committed: one caller at a time leads, running every
// waiting update in one transaction, each that runs a statement inside its
// own savepoint (see batchSQL), so one update's failure rolls back only
// its own changes and the whole group pays for one commit (one fsync)
// instead of one each.
func (s *Store) Update(ctx context.Context, fn func(tx Tx) error) error {
	return s.update(&job{ctx: ctx, fn: fn})
}

// UpdateAlone is Update in a commit of its own: no other update shares its
// transaction, and the hooks fn registers with [Tx.OnCommit] have run
// before any later update starts. Changes that in-memory state must follow
// in commit order (ledger transitions) use it.
func (s *Store) UpdateAlone(ctx context.Context, fn func(tx Tx) error) error {
	return s.update(&job{ctx: ctx, fn: fn, alone: true})
}

func (s *Store) update(j *job) error {
	j.done, j.lead = make(chan error, 1), make(chan struct{}, 1)
	s.mu.Lock()
	s.pending = append(s.pending, j)
	leader := !s.leading
	s.leading = true
	s.mu.Unlock()
	if leader {
		s.lead()
	}
	for {
		select {
		case err := <-j.done:
			return err
		case <-j.lead:
			s.lead()
		}
	}
}

// lead runs one batch, then hands the lead to the next waiting update.
func (s *Store) lead() {
	s.runNext()
	s.handOff()
}

// runNext takes the waiting updates' next batch and runs it.
func (s *Store) runNext() {
	// Updates already runnable reach the queue before the batch is taken:
	// under load they then share this commit instead of waiting for the
	// next. With nothing else to run, yielding costs a trip through the
	// scheduler.
	runtime.Gosched()
	s.mu.Lock()
	n := min(len(s.pending), maxBatch)
	for i, j := range s.pending[:n] {
		if j.alone {
			n = max(i, 1) // the updates before it, or it alone
			break
		}
	}
	batch := s.pending[:n:n]
	s.pending = s.pending[n:]
	s.mu.Unlock()
	s.runBatch(batch)
}

// handOff hands the lead to the next waiting update, if any.
func (s *Store) handOff() {
	s.mu.Lock()
	if len(s.pending) > 0 {
		s.pending[0].lead <- struct{}{}
	} else {
		s.leading = false
	}
	s.mu.Unlock()
}

// runBatch runs one batch.
func (s *Store) runBatch(batch []*job) {
	results := make([]error, len(batch))
	hooks := make([][]func(), len(batch))
	var unprepared []string
	// A lone update needs no savepoint: a failure rolls back everything.
	b := &batchSQL{savepoints: len(batch) > 1}
	b.bt = &txn{ctx: context.Background(), s: s, stmts: s.stmts, lazy: b}
	if s.log == nil {
		// Without a log file every batch commits in SQLite: begin now.
		if _, err := b.beginLazily(); err != nil {
			for _, j := range batch {
				j.done <- err
			}
			return
		}
	}
	// The journal's frontier moves with each update's appends, back on a
	// rollback.
	frontier := s.frontier.Clone()
	// What the batch's updates changed that memory follows on commit.
	batchChanged := &batchChanges{}
	ran := false
	// fail fails every update that has not failed by itself: the batch
	// rolls back.
	fail := func(err error) {
		ran = false
		for i := range results {
			if results[i] == nil {
				results[i] = err
			}
		}
	}
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			results[i] = err // never started: nothing to undo
			continue
		}
		// A started update runs to its end, whoever stops waiting for it:
		// its statements are short, and the driver would watch a context
		// that can end on a goroutine of its own for every statement.
		ctx := context.WithoutCancel(j.ctx)
		tx := &txn{ctx: ctx, s: s, stmts: s.stmts, write: true, batch: batchChanged, sql: b, lazy: b}
		before := s.frontier.Clone()
		results[i] = runJob(j.fn, tx)
		if results[i] == nil {
			results[i] = tx.failed
		}
		unprepared = append(unprepared, tx.unprepared...)
		if results[i] != nil {
			// Its appends are undone; its deferred rows are dropped.
			s.frontier = before
			if tx.savepoint {
				if _, err := b.bt.ExecContext(b.bt.ctx, `ROLLBACK TO SAVEPOINT update_job`); err != nil {
					results[i] = errors.Join(results[i], fmt.Errorf("roll back: %w", err))
					b.err = cmp.Or(b.err, results[i])
				}
			}
		} else {
			ran = true
		}
		if tx.savepoint {
			if _, err := b.bt.ExecContext(b.bt.ctx, `RELEASE SAVEPOINT update_job`); err != nil {
				// What SQL holds of the update is unknown: the batch
				// rolls back.
				b.err = cmp.Or(b.err, fmt.Errorf("release savepoint: %w", err))
			}
		}
		if results[i] == nil {
			hooks[i] = tx.onCommit
			batchChanged.add(tx.changes)
			b.deferred.add(tx.deferred)
		}
	}
	// A batch whose updates ran no statement is acknowledged from the log
	// file and copied into SQLite after (logged.go), while the copier has
	// room for it.
	var acked *logged
	if ran && b.tx == nil && b.err == nil && s.log != nil && len(batchChanged.journal) > 0 && s.roomQueued(len(batchChanged.journal)) {
		acked = &logged{rows: batchChanged.journal, deferredRows: b.deferred}
	}
	committed := false
	switch {
	case acked != nil:
		t0 := time.Now()
		if err := s.resetLog(); err != nil {
			fail(err)
		} else if _, err := s.log.Append(encodeLogged(acked)); err != nil {
			fail(fmt.Errorf("log file: %w", err))
		} else {
			committed = true
			if f := s.committed.Load(); f != nil {
				(*f)(Commit{Took: time.Since(t0), Updates: countNil(results)})
			}
		}
	case ran:
		if err := b.store(); err != nil {
			fail(err)
		}
		if ran && len(batchChanged.journal) > 0 {
			if err := journal.InsertRows(b.bt.ctx, b.bt, batchChanged.journal); err != nil {
				fail(err)
			}
		}
		if ran && s.pg != nil && s.frontier.Size() > frontier.Size() {
			// Delivered on commit: the other replicas catch up at once.
			if err := s.pg.notify(b.tx, s.frontier.Size()); err != nil {
				fail(err)
			}
		}
		if ran && b.tx == nil {
			// Nothing to write (an update that changed nothing).
			committed = true
			break
		}
		if ran {
			t0 := time.Now()
			if err := b.tx.Commit(); err != nil {
				fail(fmt.Errorf("commit: %w", err))
			} else {
				committed = true
				if f := s.committed.Load(); f != nil {
					(*f)(Commit{Took: time.Since(t0), Updates: countNil(results)})
				}
			}
		}
	}
	if !committed && b.tx != nil {
		_ = b.tx.Rollback()
	}
	if !committed && b.copiedFailed != nil {
		// Not copied after all: the copier makes them again.
		s.copiedThrough(b.copiedFailed, cmp.Or(b.err, errors.New("the transaction that copied them did not commit")))
	}
	if committed {
		s.apply(batchChanged)
		s.grew()
		if b.copiedFailed != nil {
			s.copiedThrough(b.copiedFailed, nil)
		}
	} else {
		s.frontier = frontier
	}
	s.stmts.PrepareAll(context.Background(), append(unprepared, b.bt.unprepared...))
	for i := range batch {
		if results[i] == nil {
			for _, h := range hooks[i] {
				h()
			}
		}
	}
	if committed && s.log != nil {
		// Readers from here on wait for the batch's copy into SQLite;
		// the hooks above did not.
		s.copies.acked.Store(s.frontier.Size())
		s.sized(s.frontier.Size())
		if acked != nil {
			s.queue(acked)
		} else {
			s.copiedThroughSize(s.frontier.Size())
		}
	}
	for i, j := range batch {
		j.done <- results[i]
	}
}

// countNil counts the updates that did not fail.
func countNil(errs []error) (n int) {
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}

// grew publishes the journal's head after a commit, and its size unless
// the store keeps a log file: then the size moves once readers wait for
// the batch's copy (runBatch), so that none is told of entries it could
// not read yet.
func (s *Store) grew() {
	size := s.frontier.Size()
	if h := s.mirror.head.Load(); h == nil || size > h.Size {
		head := s.frontier.Head()
		s.mirror.head.Store(&head)
	}
	if s.log == nil {
		s.sized(size)
	}
}

// sized publishes the journal's size that readers can read, and wakes a
// waiter for it (JournalGrown).
func (s *Store) sized(size uint64) {
	if size > s.size.Load() {
		s.size.Store(size)
		if size >= s.grownAt.Load() {
			s.signalGrown()
		}
	}
}

func (s *Store) signalGrown() {
	select {
	case s.grown <- struct{}{}:
	default: // a signal is already pending
	}
}

// JournalSize is the number of committed journal entries.
func (s *Store) JournalSize() uint64 { return s.size.Load() }

// JournalGrown returns a channel signalled once a commit has taken the
// journal to size entries or beyond (at once if it is there already); one
// pending signal stands for any number of commits. Each call replaces the
// size of the one before, so it serves one waiter. A commit short of the
// size wakes no one: a decision's commit does not wake the checkpoint
// publisher, which waits for a thousand entries.
func (s *Store) JournalGrown(size uint64) <-chan struct{} {
	// The commit stores its size before it reads grownAt, and this reads
	// the size after it stores grownAt: one of the two sees the other.
	s.grownAt.Store(size)
	if s.size.Load() >= size {
		s.signalGrown()
	}
	return s.grown
}

// runJob runs one update, turning a panic into that update's error so the
// rest of its group still commits.
func runJob(fn func(tx Tx) error, tx *txn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("update panicked: %v", r)
		}
	}()
	return fn(tx)
}

// View runs fn in a read-only transaction, one state of the database, on
// the read connections: never the writer's, whose transactions take
// SQLite's write lock.
func (s *Store) View(ctx context.Context, fn func(tx Tx) error) error {
	if s.pg != nil {
		// What memory holds (the ledger) must be no older than the rows.
		if err := s.pg.catchUpIfBehind(ctx, s); err != nil {
			return err
		}
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	sqlTx, err := s.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &txn{tx: sqlTx, ctx: ctx, s: s, stmts: s.roStmts}
	defer func() { s.roStmts.PrepareAll(ctx, tx.unprepared) }()
	defer func() { _ = sqlTx.Rollback() }()
	return fn(tx)
}

// Entries reads the journal after position after (limit <= 0: all).
// Reads of the journal run prepared statements: parsing one costs more
// than finding an entry by its ref, which a contract loaded again from
// the journal does on a decision.
func (s *Store) Entries(ctx context.Context, after int64, limit int) ([]journal.Entry, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return journal.Read(ctx, s.roStmts, after, limit)
}

// EntriesWithRef reads the journal's entries with one ref, among kinds
// (any kind when none is given).
func (s *Store) EntriesWithRef(ctx context.Context, ref string, kinds ...string) ([]journal.Entry, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return journal.ReadRef(ctx, s.roStmts, ref, kinds...)
}

// EntriesWithRefs reads the journal's entries whose ref is one of refs,
// among kinds (see [journal.ReadRefs]).
func (s *Store) EntriesWithRefs(ctx context.Context, refs []string, kinds ...string) ([]journal.Entry, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return journal.ReadRefs(ctx, s.roStmts, refs, kinds...)
}

// Head is the journal's committed tree head.
func (s *Store) Head(ctx context.Context) (journal.TreeHead, error) {
	if err := s.settle(ctx); err != nil {
		return journal.TreeHead{}, err
	}
	return journal.Head(ctx, s.ro)
}

// InclusionProof proves the leaf at index is in the tree of size.
func (s *Store) InclusionProof(ctx context.Context, index, size uint64) (p [][]byte, err error) {
	err = s.readJournal(ctx, func(tx *sql.Tx) error {
		p, err = journal.InclusionProof(ctx, tx, index, size)
		return err
	})
	return p, err
}

// ConsistencyProof proves the tree of size1 is a prefix of that of size2.
func (s *Store) ConsistencyProof(ctx context.Context, size1, size2 uint64) (p [][]byte, err error) {
	err = s.readJournal(ctx, func(tx *sql.Tx) error {
		p, err = journal.ConsistencyProof(ctx, tx, size1, size2)
		return err
	})
	return p, err
}

// VerifyJournal streams the whole journal through [journal.Verify] against
// trusted tree heads, without holding the writing connection.
func (s *Store) VerifyJournal(ctx context.Context, trusted []journal.TreeHead) (r journal.Report, err error) {
	err = s.readJournal(ctx, func(tx *sql.Tx) error {
		r, err = journal.Verify(ctx, tx, trusted)
		return err
	})
	return r, err
}

// readJournal runs fn in one read transaction, so that what it reads
// (rows and head) is one state of the journal.
func (s *Store) readJournal(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.settle(ctx); err != nil {
		return err
	}
	tx, err := s.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("journal read: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

// The store is the embedded journal.Log.
var (
	_ journal.Reader   = (*Store)(nil)
	_ journal.Appender = (*txn)(nil)
)

// txn is one transaction, on either database.
type txn struct {
	// tx is a View's transaction; an update's is its batch's (lazy), and
	// a Read has none.
	tx   *sql.Tx
	lazy *batchSQL
	// settling marks a Read that has run no statement yet: its first
	// waits for SQLite to hold what was acknowledged (Store.settle).
	settling   bool
	ctx        context.Context
	s          *Store
	unprepared []string
	onCommit   []func()
	// write marks a transaction of Update, which appends through the
	// store's frontier.
	write bool
	// stmts is the cache of the transaction's database.
	stmts *sqldb.Prepared
	// changes are what the update wrote that memory follows once it
	// commits; batch, what the updates before it in its batch wrote.
	changes changes
	batch   *batchChanges
	// mirrored reads through memory (see optimistic.go).
	mirrored bool
	// sql is the batch of an update (nil for any other transaction):
	// entered marks an update that has run a statement, savepoint one
	// whose savepoint is open, deferred holds its capability rows not
	// stored yet, and failed what failed it outside its own statements
	// (see batchSQL).
	sql       *batchSQL
	entered   bool
	savepoint bool
	deferred  deferredRows
	failed    error
}

// OnCommit registers f to run once the update's changes are committed, in
// the committing goroutine, before the update returns. It never runs for
// an update that is rolled back.
func (t *txn) OnCommit(f func()) { t.onCommit = append(t.onCommit, f) }

// stmt returns the transaction's handle on the cached statement for query,
// or nil when it is not prepared yet; then the query runs unprepared and is
// prepared once the transaction has given its connection back.
func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := t.stmts.Cached(query); st != nil {
		if tx := t.sqlTx(); tx != nil {
			return tx.StmtContext(ctx, st)
		}
		return st
	}
	t.unprepared = append(t.unprepared, query)
	return nil
}

// conn runs what is not prepared yet: the transaction, or for a Read the
// read connections themselves.
func (t *txn) conn() sqldb.Querier {
	if tx := t.sqlTx(); tx != nil {
		return tx
	}
	return t.s.ro
}

// sqlTx is the transaction t runs in: a View's, or its batch's once begun.
func (t *txn) sqlTx() *sql.Tx {
	if t.tx != nil {
		return t.tx
	}
	if t.lazy != nil {
		return t.lazy.tx
	}
	return nil
}

// ExecContext runs a statement in the transaction.
func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := t.enter(); err != nil {
		return nil, err
	}
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.conn().ExecContext(ctx, query, args...)
}

// QueryContext runs a query in the transaction.
func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := t.enter(); err != nil {
		return nil, err
	}
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.conn().QueryContext(ctx, query, args...)
}

// QueryRowContext runs a one-row query in the transaction. Should the
// rows deferred before it fail to be stored, the query still runs, on
// what is stored, and the update fails whatever it returns.
func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := t.enter(); err != nil && !t.write && t.sqlTx() == nil {
		// A Read that could not wait for SQLite to hold what was
		// acknowledged must not read what it holds: its row fails.
		failed, cancel := context.WithCancel(ctx)
		cancel()
		return t.s.ro.QueryRowContext(failed, query, args...)
	}
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.conn().QueryRowContext(ctx, query, args...)
}

// Append adds a journal entry that commits with the transaction.
func (t *txn) Append(at time.Time, kind, ref string, body []byte) (journal.Entry, error) {
	if !t.write {
		return journal.Entry{}, errors.New("journal append outside an update")
	}
	if t.s.frontierErr != nil {
		return journal.Entry{}, fmt.Errorf("journal append: %w", t.s.frontierErr)
	}
	r, err := journal.Next(t.s.frontier, at, kind, ref, body)
	if err != nil {
		return journal.Entry{}, err
	}
	// Stored with the batch's other entries before it commits.
	t.changes.journal = append(t.changes.journal, r)
	return r.Entry, nil
}

// LogIndex is the leaf index of the journal entry of kind with ref: where
// a receipt recorded earlier sits in the log.
func (t *txn) LogIndex(kind, ref string) (uint64, error) {
	es, err := journal.ReadRef(t.ctx, t, ref, kind)
	if err != nil {
		return 0, err
	}
	if len(es) == 0 {
		// Appended in this batch, not stored yet?
		var pending []journal.Row
		if t.batch != nil {
			pending = t.batch.journal
		}
		for _, r := range append(pending, t.changes.journal...) {
			if r.Kind == kind && r.Ref == ref {
				return uint64(r.Seq - 1), nil
			}
		}
		return 0, fmt.Errorf("journal entry %s %q: %w", kind, ref, ErrNotFound)
	}
	return uint64(es[0].Seq - 1), nil
}

// Head is the journal's tree head as this transaction sees it.
func (t *txn) Head() (journal.TreeHead, error) {
	if t.write && t.s.frontierErr == nil {
		return t.s.frontier.Head(), nil
	}
	return journal.Head(t.ctx, t)
}

// tsLayout has a fixed width, so stored times compare correctly as text.
const tsLayout = "2006-01-02T15:04:05.000000000Z"

func ts(t time.Time) string { return t.UTC().Format(tsLayout) }

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
