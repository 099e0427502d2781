package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/logfile"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
)

// An exclusive SQLite store at durability normal keeps a log file beside
// its database (its path and logSuffix). A batch of updates none of which
// ran a statement of its own (decisions: journal entries and deferred
// rows, capabilities and answers to request ids; see loggedRequest) is
// acknowledged once appended there, one write(2), instead of once SQLite
// has committed it. The copier, a goroutine of its own, copies the
// batches acknowledged into SQLite in order, all those acknowledged while
// it copied the last, and those that follow within copyLinger, in one
// transaction, while the writer goes on acknowledging more: a store pays
// SQLite's commit once for many batches, and a decision made alone does
// not wait for the copy of the one before it.
//
// SQLite holds every acknowledged batch but those queued for the copier
// or being copied. A reader of SQLite (View, Read's statements, the
// journal's reads) first waits for the copies to reach what was
// acknowledged when it began; commit hooks run before the acknowledgement
// moves, so they never wait for their own batch. An update that runs a
// statement first waits for the copier to finish, so that SQLite holds
// everything before it. A failed copy is kept, and made again by the
// copier after a wait (copyRetry), or first by the next copy or
// transaction, whichever comes first; readers fail meanwhile. At most
// maxQueuedRows journal rows wait for the copier: past that a batch
// commits in SQLite, after the copies. A start copies what the log holds
// past SQLite's journal, then empties the log; a running store empties it
// once it has grown past logResetSize, after the copier has caught up, and
// a clean close leaves it empty.
//
// At durability full every batch commits in SQLite (a start at full still
// copies what a run at normal left in the log): a log file that grows
// with each append syncs its size with each batch, which costs about what
// SQLite's commit does (BenchmarkDecisionCommit), and the copy's commit
// would then sync a second time.
const logSuffix = "-log"

// logResetSize is the log's size past which it is emptied once the copier
// has caught up.
const logResetSize = 8 << 20

// maxQueuedRows bounds the journal rows acknowledged from the log and not
// yet taken by the copier, or left by failed copies: readers wait for
// them, and memory holds them.
const maxQueuedRows = 1024

// A copy waits up to copyLinger after the first batch queued, so that one
// copy takes many batches even when they come one at a time: a copy's
// commit costs about what a decision does. Nobody waits on it meanwhile:
// a reader or a statement that needs SQLite to hold what was acknowledged
// hurries the copy, and so do copyRows journal rows queued.
const (
	copyLinger = 2 * time.Millisecond
	copyRows   = maxQueuedRows / 4
)

// A failed copy is made again after copyRetry, twice as long after each
// failure in a row up to copyRetryMax, so that readers, which fail while
// it is not made, recover without waiting for the next decision.
const (
	copyRetry    = 50 * time.Millisecond
	copyRetryMax = 5 * time.Second
)

// logFormat begins every logged batch's record: 2 adds answers to request
// ids after the capabilities, which a record of format 1 has none of.
const logFormat = 2

// logged is a batch acknowledged from the log file: its journal rows and
// its deferred rows, to be copied into SQLite.
type logged struct {
	rows []journal.Row
	deferredRows
}

// copying follows the copy of logged batches into SQLite: the journal's
// size acknowledged and the size copied, the batches queued for the
// copier and those whose copy failed, and the wait of readers and of the
// writer. busy marks a copy under way: the copier's, or that of the
// writer's transaction, which claims the failed batches (claimFailed)
// once the copier is idle with nothing queued; no batch is queued while
// the writer runs one that began a transaction.
type copying struct {
	acked, copied atomic.Uint64
	mu            sync.Mutex
	queued        []*logged
	queuedRows    int
	busy          bool
	failed        []*logged
	err           error
	retries       int
	// requests are the answers to request ids of the batches acknowledged
	// and not yet in SQLite (queued, being copied or failed), which
	// updates find there before SQLite holds them (loggedRequest).
	requests map[requestKey]*Request
	// retryAfter is copyRetry (tests shorten it).
	retryAfter time.Duration
	moved      chan struct{}
	// wake tells the copier a batch was queued; stop ends it once it has
	// copied what is queued, and stopped is closed once it has ended.
	wake chan struct{}
	// hurry ends a copy's linger: someone waits for it, or enough is
	// queued.
	hurry   chan struct{}
	linger  time.Duration
	stop    chan struct{}
	stopped chan struct{}
	closed  sync.Once
	// hold, when set, runs before a copy, and its error fails it: tests
	// hold a copy or fail it there.
	hold func() error
}

// encodeLogged is a batch's record in the log file.
func encodeLogged(b *logged) []byte {
	// Sized once: a row's fields besides its body, and a capability's,
	// take well under their allowance here.
	size := 1 + 2*binary.MaxVarintLen64 + 256*len(b.caps)
	for _, r := range b.rows {
		size += 64 + len(r.Kind) + len(r.Ref) + len(r.Body)
	}
	for _, r := range b.reqs {
		size += 64 + len(r.TaskID) + len(r.RequestID) + len(r.Agent) + len(r.CallHash) + len(r.Response)
	}
	buf := append(make([]byte, 0, size), logFormat)
	buf = binary.AppendUvarint(buf, uint64(len(b.rows)))
	for _, r := range b.rows {
		buf = binary.AppendUvarint(buf, uint64(r.Seq))
		buf = binary.AppendVarint(buf, r.At.UnixNano())
		buf = appendString(buf, r.Kind)
		buf = appendString(buf, r.Ref)
		buf = append(binary.AppendUvarint(buf, uint64(len(r.Body))), r.Body...)
	}
	buf = binary.AppendUvarint(buf, uint64(len(b.caps)))
	for _, c := range b.caps {
		for _, f := range [...]string{c.CapabilityID, c.DecisionID, c.TaskID, c.Record, c.StateVersion, c.IdempotencyKey, c.Tool, c.Currency,
			c.EffectReceiptID, c.ReadbackReceiptID, c.Note, c.ApprovalID, c.EffectHash, c.Holder} {
			buf = appendString(buf, f)
		}
		buf = binary.AppendVarint(buf, c.AmountMinor)
		buf = binary.AppendVarint(buf, int64(c.Status))
		buf = binary.AppendVarint(buf, c.IssuedAt.UnixNano())
		buf = binary.AppendVarint(buf, c.ExpiresAt.UnixNano())
	}
	buf = binary.AppendUvarint(buf, uint64(len(b.reqs)))
	for _, r := range b.reqs {
		for _, f := range [...]string{r.TaskID, r.RequestID, r.Agent, r.CallHash, string(r.Response)} {
			buf = appendString(buf, f)
		}
		buf = binary.AppendVarint(buf, r.At.UnixNano())
	}
	return buf
}

// appendString appends s prefixed by its length, without converting it.
func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// loggedEntry is a journal entry as a logged batch records it, without
// the hashes its copy computes again.
type loggedEntry struct {
	seq             int64
	at              time.Time
	kind, ref, body string
}

// decodeLogged reads a record of encodeLogged.
func decodeLogged(rec []byte) ([]loggedEntry, []Capability, []Request, error) {
	d := logDecoder{b: rec}
	v := d.byte()
	if v != 1 && v != logFormat {
		return nil, nil, nil, fmt.Errorf("a logged batch of format %d, not 1 to %d", v, logFormat)
	}
	var entries []loggedEntry
	for n := d.count(); n > 0 && d.err == nil; n-- {
		entries = append(entries, loggedEntry{seq: int64(d.uvarint()), at: time.Unix(0, d.varint()).UTC(), kind: d.string(), ref: d.string(), body: d.string()})
	}
	var caps []Capability
	for n := d.count(); n > 0 && d.err == nil; n-- {
		var f [14]string
		for i := range f {
			f[i] = d.string()
		}
		c := Capability{CapabilityID: f[0], DecisionID: f[1], TaskID: f[2], Record: f[3], StateVersion: f[4], IdempotencyKey: f[5], Tool: f[6], Currency: f[7],
			EffectReceiptID: f[8], ReadbackReceiptID: f[9], Note: f[10], ApprovalID: f[11], EffectHash: f[12], Holder: f[13]}
		c.AmountMinor = d.varint()
		c.Status = agentv1.CommitmentStatus(d.varint())
		c.IssuedAt = time.Unix(0, d.varint()).UTC()
		c.ExpiresAt = time.Unix(0, d.varint()).UTC()
		caps = append(caps, c)
	}
	var reqs []Request
	if v >= 2 {
		for n := d.count(); n > 0 && d.err == nil; n-- {
			var f [5]string
			for i := range f {
				f[i] = d.string()
			}
			reqs = append(reqs, Request{TaskID: f[0], RequestID: f[1], Agent: f[2], CallHash: f[3], Response: []byte(f[4]), At: time.Unix(0, d.varint()).UTC()})
		}
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after its last row", len(d.b))
	}
	if d.err != nil {
		return nil, nil, nil, fmt.Errorf("a logged batch: %w", d.err)
	}
	return entries, caps, reqs, nil
}

// logDecoder reads a record, keeping its first error.
type logDecoder struct {
	b   []byte
	err error
}

func (d *logDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("cut short in %s", what)
	}
	d.b = nil
}

func (d *logDecoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("its format")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *logDecoder) uvarint() uint64 { return number(d, binary.Uvarint) }

func (d *logDecoder) varint() int64 { return number(d, binary.Varint) }

// number reads a varint with read (binary.Uvarint or binary.Varint).
func number[T uint64 | int64](d *logDecoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail("a number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count is a number of rows, each at least a byte long.
func (d *logDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("its rows")
		return 0
	}
	return int(n)
}

func (d *logDecoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("a field")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// logPath is the log file beside an SQLite database at path, or "" for a
// database that is not a file of its own.
func logPath(path string) string {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.Contains(path, "?") {
		return ""
	}
	return path + logSuffix
}

// LoggedThrough is the last journal entry the log file beside the SQLite
// database at path holds (0 for none), reading it only. A store closed
// cleanly leaves the log empty; after a crash it may hold entries past the
// database's journal, which a tool reading the database alone must not
// pass over.
func LoggedThrough(path string) (int64, error) {
	p := logPath(path)
	if p == "" {
		return 0, nil
	}
	var last int64
	err := logfile.ScanFile(p, func(n uint64, rec []byte) error {
		entries, _, _, err := decodeLogged(rec)
		if err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		if len(entries) > 0 {
			last = entries[len(entries)-1].seq
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("log file %s: %w", p, err)
	}
	return last, nil
}

// openLog opens the log file beside the database and copies into SQLite
// the batches it holds past SQLite's journal (acknowledged, and not
// copied before the process stopped), then empties it; and keeps it open
// to acknowledge batches from when keep is set.
func (s *Store) openLog(ctx context.Context, path string, d Durability, keep bool) error {
	l, err := logfile.Open(path, logfile.Options{Sync: d == DurabilityFull})
	if err != nil {
		return err
	}
	size := s.frontier.Size()
	var pending []*logged
	err = l.Scan(func(n uint64, rec []byte) error {
		entries, caps, reqs, err := decodeLogged(rec)
		if err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		if len(entries) == 0 || entries[len(entries)-1].seq <= int64(size) {
			return nil // copied before the process stopped
		}
		if entries[0].seq <= int64(size) {
			return fmt.Errorf("record %d holds journal entries %d to %d, and the database's journal ends at %d inside them", n, entries[0].seq, entries[len(entries)-1].seq, size)
		}
		b := &logged{deferredRows: deferredRows{caps, reqs}}
		for _, e := range entries {
			r, err := journal.Next(s.frontier, e.at, e.kind, e.ref, []byte(e.body))
			if err != nil {
				return err
			}
			if r.Seq != e.seq {
				return fmt.Errorf("record %d holds journal entry %d where the database's journal, with the records before it, ends at %d: entries acknowledged at durability normal were lost with the machine", n, e.seq, r.Seq-1)
			}
			b.rows = append(b.rows, r)
		}
		pending = append(pending, b)
		return nil
	})
	if err == nil && len(pending) > 0 {
		err = s.copyInto(ctx, pending)
	}
	if err == nil {
		err = l.Reset()
	}
	if err != nil {
		// The store is not opened: the frontier moved for nothing.
		_ = l.Close()
		return fmt.Errorf("log file %s: %w", path, err)
	}
	s.grew() // publishes the journal's size and head, as after a commit
	if !keep {
		return l.Close()
	}
	s.log = l
	s.copies.acked.Store(s.frontier.Size())
	s.copies.copied.Store(s.frontier.Size())
	s.copies.moved = make(chan struct{})
	s.copies.wake, s.copies.hurry = make(chan struct{}, 1), make(chan struct{}, 1)
	s.copies.linger, s.copies.retryAfter = copyLinger, copyRetry
	s.copies.requests = map[requestKey]*Request{}
	s.copies.stop, s.copies.stopped = make(chan struct{}), make(chan struct{})
	go s.copier()
	return nil
}

// copier copies the batches queued, each time all of them once it has
// lingered (linger), and makes failed copies again (retry), until
// stopped.
func (s *Store) copier() {
	c := &s.copies
	defer close(c.stopped)
	for {
		retry, moved := s.retry()
		select {
		case <-c.wake:
			s.linger()
			s.copyQueued()
		case <-retry:
			s.copyQueued()
		case <-moved:
			// A copy's outcome, perhaps the writer's handing failed
			// batches back: when to retry is due again.
		case <-c.stop:
			s.copyQueued()
			return
		}
	}
}

// retry is when to make a failed copy again (never, with none failed),
// until the next copy's outcome (moved).
func (s *Store) retry() (retry <-chan time.Time, moved chan struct{}) {
	c := &s.copies
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failed) == 0 {
		return nil, c.moved
	}
	return time.After(min(c.retryAfter<<min(max(c.retries-1, 0), 10), copyRetryMax)), c.moved
}

// linger waits, before a copy, for copyLinger (tests change it), for a
// hurry or for a stop.
func (s *Store) linger() {
	c := &s.copies
	c.mu.Lock()
	d := c.linger
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.hurry:
	case <-c.stop:
	}
}

// hurryCopy ends the copy's linger.
func (s *Store) hurryCopy() {
	select {
	case s.copies.hurry <- struct{}{}:
	default: // already hurried
	}
}

// stopLog stops the copier, once it has copied what was queued, and
// closes the log file: empty when all of it is in SQLite, so that tools
// reading the database alone see everything.
func (s *Store) stopLog() {
	s.copies.closed.Do(func() {
		close(s.copies.stop)
		<-s.copies.stopped
		if len(s.uncopied()) == 0 {
			_ = s.log.Reset()
		}
		_ = s.log.Close()
	})
}

// copyInto copies batches into SQLite in one transaction of their own.
func (s *Store) copyInto(ctx context.Context, batches []*logged) error {
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("copy logged batches: begin: %w", err)
	}
	t := &txn{tx: sqlTx, ctx: ctx, s: s, stmts: s.stmts}
	// A copy's inserts, of as many rows as it holds, are prepared once
	// the connection is free: parsing one costs more than a few rows.
	defer func() { s.stmts.PrepareAll(ctx, t.unprepared) }()
	if err := s.insertLogged(t, batches); err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("copy logged batches: commit: %w", err)
	}
	return nil
}

// insertLogged inserts batches' rows in t, those of all of them together:
// one multi-row statement of capabilities and of journal rows for many
// batches.
func (s *Store) insertLogged(t *txn, batches []*logged) error {
	var rows []journal.Row
	var d deferredRows
	for _, b := range batches {
		rows = append(rows, b.rows...)
		d.add(b.deferredRows)
	}
	if len(d.caps) > 0 {
		// Off the decisions' path, a copy stores capabilities with their
		// indexes at once, rather than pending for another commit to move.
		if err := insertCapabilityRows(t, d.caps, &insertShared); err != nil {
			return fmt.Errorf("copy logged batches: %w", err)
		}
	}
	if err := insertRequests(t, d.reqs); err != nil {
		return fmt.Errorf("copy logged batches: %w", err)
	}
	if err := journal.InsertRows(t.ctx, t, rows); err != nil {
		return fmt.Errorf("copy logged batches: %w", err)
	}
	return nil
}

// requestKey is a request id of a task.
type requestKey struct{ task, request string }

// queuedRequest is the answer to a request id in a batch acknowledged and
// not yet in SQLite.
func (s *Store) queuedRequest(taskID, requestID string) (Request, bool) {
	c := &s.copies
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.requests[requestKey{taskID, requestID}]
	if !ok {
		return Request{}, false
	}
	return *r, true
}

// queue hands a batch just acknowledged to the copier.
func (s *Store) queue(b *logged) {
	c := &s.copies
	c.mu.Lock()
	for i := range b.reqs {
		c.requests[requestKey{b.reqs[i].TaskID, b.reqs[i].RequestID}] = &b.reqs[i]
	}
	c.queued = append(c.queued, b)
	c.queuedRows += len(b.rows)
	full := c.queuedRows >= copyRows
	c.mu.Unlock()
	if full {
		s.hurryCopy()
	}
	select {
	case c.wake <- struct{}{}:
	default: // the copier will find it with the others
	}
}

// roomQueued says whether a batch of rows journal rows may be
// acknowledged from the log: the copier has room for them.
func (s *Store) roomQueued(rows int) bool {
	c := &s.copies
	c.mu.Lock()
	defer c.mu.Unlock()
	waiting := c.queuedRows
	for _, b := range c.failed {
		// Copies that keep failing hold no more than that in memory:
		// past it, the writer's transaction copies them, or fails.
		waiting += len(b.rows)
	}
	return waiting+rows <= maxQueuedRows
}

// copyQueued copies what failed copies left and what was queued since
// into SQLite, in one transaction. A failure keeps them all for the next
// copy or transaction, and readers meanwhile fail with it. The copier
// alone runs it, one copy at a time.
func (s *Store) copyQueued() {
	c := &s.copies
	c.mu.Lock()
	if c.busy || len(c.queued)+len(c.failed) == 0 {
		// A wake for batches an earlier copy took, a retry of those the
		// writer's transaction is making, or, at a stop, none.
		c.mu.Unlock()
		return
	}
	batches := append(c.failed, c.queued...)
	c.failed, c.queued, c.queuedRows, c.busy = nil, nil, 0, true
	hold := c.hold
	c.mu.Unlock()
	var err error
	if hold != nil {
		err = hold()
	}
	if err == nil {
		err = s.copyInto(context.Background(), batches)
	}
	s.copiedThrough(batches, err)
}

// copiedThrough records the outcome of a copy of batches: the size copied
// moves, or they stay to be copied by the next copy or transaction.
// Readers and the writer waiting hear of it either way.
func (s *Store) copiedThrough(batches []*logged, err error) {
	c := &s.copies
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = false
	if err != nil {
		c.failed, c.err = batches, err
		c.retries++
	} else {
		c.failed, c.err, c.retries = nil, nil, 0
		for _, b := range batches {
			for _, r := range b.reqs {
				delete(c.requests, requestKey{r.TaskID, r.RequestID})
			}
		}
		last := batches[len(batches)-1].rows
		c.copied.Store(uint64(last[len(last)-1].Seq))
	}
	close(c.moved)
	c.moved = make(chan struct{})
}

// copiedThroughSize records that SQLite holds the journal to size, once a
// batch committed there, or changed nothing, with nothing left to copy.
func (s *Store) copiedThroughSize(size uint64) {
	c := &s.copies
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy || len(c.queued) > 0 || len(c.failed) > 0 {
		return // the copier moves it
	}
	c.copied.Store(size)
	close(c.moved)
	c.moved = make(chan struct{})
}

// resetLog empties the log file once it has grown past logResetSize and
// the copier has caught up; the writer calls it before an append, which
// no copy reads.
func (s *Store) resetLog() error {
	if s.log.Size() <= logResetSize {
		return nil
	}
	s.drainLocked()
	failed := len(s.copies.failed) > 0
	s.copies.mu.Unlock()
	if failed {
		return nil // a failed copy's batches are only in the log
	}
	// Nothing is left to copy, so the copier starts no copy before the
	// writer queues another batch.
	if err := s.log.Reset(); err != nil {
		return fmt.Errorf("log file: empty: %w", err)
	}
	return nil
}

// drainLocked waits until the copier is idle with nothing queued, and
// returns holding copies.mu: SQLite then holds every acknowledged batch
// but those a failed copy left, and no copy starts before the lock is let
// go.
func (s *Store) drainLocked() {
	c := &s.copies
	c.mu.Lock()
	for c.busy || len(c.queued) > 0 {
		s.hurryCopy()
		moved := c.moved
		c.mu.Unlock()
		select {
		case <-moved:
		case <-c.stopped:
			c.mu.Lock()
			return // closed: nothing more is copied
		}
		c.mu.Lock()
	}
}

// claimFailed, for the writer's transaction, waits for the copier to be
// idle with nothing queued and takes the batches failed copies left, to
// copy them first: the copier does not retry them meanwhile (busy), and
// the writer hands them back with copiedThrough, copied or not.
func (s *Store) claimFailed() []*logged {
	s.drainLocked()
	c := &s.copies
	defer c.mu.Unlock()
	claimed := c.failed
	if len(claimed) > 0 {
		c.failed, c.busy = nil, true
	}
	return claimed
}

// uncopied are the acknowledged batches not in SQLite that the copier is
// not copying: those a failed copy left, then those queued.
func (s *Store) uncopied() []*logged {
	c := &s.copies
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(slices.Clip(c.failed), c.queued...)
}

// settle waits until SQLite holds every batch acknowledged before it was
// called: what a reader of SQLite must see.
func (s *Store) settle(ctx context.Context) error {
	if s.log == nil {
		return nil
	}
	c := &s.copies
	target := c.acked.Load()
	for {
		c.mu.Lock()
		moved, err := c.moved, c.err
		c.mu.Unlock()
		if c.copied.Load() >= target {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the store has not copied acknowledged entries into its database: %w", err)
		}
		s.hurryCopy()
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// beginLazily is the batch's transaction, begun by its first statement:
// a batch whose updates run none is acknowledged from the log file (see
// logSuffix). It copies first what a failed copy left.
func (b *batchSQL) beginLazily() (*sql.Tx, error) {
	if b.tx != nil || b.beginErr != nil {
		return b.tx, b.beginErr
	}
	s := b.bt.s
	var claimed []*logged
	if s.log != nil {
		// SQLite must hold every acknowledged batch before this one.
		claimed = s.claimFailed()
	}
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		b.beginErr = fmt.Errorf("begin: %w", err)
		if len(claimed) > 0 {
			s.copiedThrough(claimed, b.beginErr)
		}
		return nil, b.beginErr
	}
	if s.pg != nil {
		// Other replicas write the same journal: take the writers' lock,
		// then catch up with what they committed.
		if err := s.pg.lockAndCatchUp(tx, s); err != nil {
			_ = tx.Rollback()
			b.beginErr = err
			return nil, err
		}
	}
	b.tx = tx
	if len(claimed) > 0 {
		if err := s.insertLogged(b.bt, claimed); err != nil {
			b.beginErr = errors.Join(err, tx.Rollback())
			b.tx = nil
			s.copiedThrough(claimed, b.beginErr)
			return nil, b.beginErr
		}
		b.copiedFailed = claimed
	}
	return tx, nil
}
