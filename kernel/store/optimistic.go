package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
)

// An exclusive store (the embedded SQLite database, which only this
// process writes) lets a decision read outside the writer: memory follows
// every commit of the few things a decision reads that other updates
// change (task bindings, record versions, task usage, the journal's head),
// so the reader can stamp what it read and the writer can check the stamp
// before it appends. Everything else a decision reads is immutable once
// written (evidence rows, contracts by hash) or is checked again by the
// writer (approvals, request ids). A PostgreSQL store is written by other
// replicas too, whose commits this memory never sees: it is not exclusive,
// and its decisions read inside the writer.

// stamps is how many version counters keys share; a collision only makes a
// reader retry.
const stamps = 1 << 12

// BindingKey names the version of a task's binding.
func BindingKey(taskID string) string { return "task\x00" + taskID }

// RecordKey names the version of a record's observed state version.
func RecordKey(source, key string) string { return "record\x00" + source + "/" + key }

// versions are the stamps' counters; a committed write to a key moves its
// counter.
type versions struct {
	seed maphash.Seed
	n    [stamps]atomic.Uint64
}

func (v *versions) slot(key string) *atomic.Uint64 {
	return &v.n[maphash.String(v.seed, key)%stamps]
}

// Exclusive reports whether this process is the database's only writer,
// so that [Store.Versions], [Store.Usage] and [Store.CommittedHead] follow
// every commit.
func (s *Store) Exclusive() bool { return s.pg == nil }

// Versions stamps keys: read them before reading what they name, and hand
// them to [Tx.Changed] in the update that acts on what was read.
func (s *Store) Versions(keys []string) []uint64 {
	out := make([]uint64, len(keys))
	for i, k := range keys {
		out[i] = s.versions.slot(k).Load()
	}
	return out
}

// Changed reports whether a key stamped with [Store.Versions] was written
// since: by a committed update, or by an earlier update of this one's
// batch (whose writes this update sees but the stamp's reader did not).
func (t *txn) Changed(keys []string, stamp []uint64) bool {
	for i, k := range keys {
		if t.s.versions.slot(k).Load() != stamp[i] || (t.batch != nil && t.batch.touched[k]) {
			return true
		}
	}
	return false
}

// touch notes that the update wrote key.
func (t *txn) touch(key string) {
	if t.s.pg == nil {
		t.changes.touched = append(t.changes.touched, key)
	}
}

// usage is one task's capabilities that count against its grant.
type usage struct {
	actions int64
	minor   map[string]int64 // by currency
}

// usageDelta is one change of a task's usage.
type usageDelta struct {
	task, currency string
	sign, minor    int64
}

// changes are what one update wrote that memory follows once it commits.
type changes struct {
	touched  []string
	usage    []usageDelta
	bindings []string // tasks
	records  []recordVersion
	evidence []Evidence
	issued   []issued
	// journal holds the entries appended, stored when the batch commits.
	journal []journal.Row
}

// recordVersion is a record's state version as written.
type recordVersion struct {
	key, version string
}

// issued is an outstanding capability's expiry.
type issued struct {
	task    string
	expires time.Time
}

// batchChanges are the changes of a batch's updates that ran so far.
type batchChanges struct {
	touched map[string]bool
	changes
}

func (b *batchChanges) add(c changes) {
	b.bindings = append(b.bindings, c.bindings...)
	b.records = append(b.records, c.records...)
	b.evidence = append(b.evidence, c.evidence...)
	b.issued = append(b.issued, c.issued...)
	b.journal = append(b.journal, c.journal...)
	for _, k := range c.touched {
		if b.touched == nil {
			b.touched = map[string]bool{}
		}
		b.touched[k] = true
	}
	b.changes.touched = append(b.changes.touched, c.touched...)
	b.usage = append(b.usage, c.usage...)
}

// mirror follows an exclusive store's commits.
type mirror struct {
	mu sync.Mutex
	// usage is, for each task whose usage was counted since the store
	// opened, what its capabilities use up as last committed: the only
	// count an exclusive store keeps. A task it does not name is counted
	// in the writer the first time it is asked for (see exclusiveUsage).
	usage map[string]*usage
	head  atomic.Pointer[journal.TreeHead]
	// tasks holds the bindings read since the store opened, records the
	// record versions read or written since, each as last committed, by
	// BindingKey and RecordKey; at most maxCached of each.
	tasks   map[string]Task
	records map[string]string
	// evidence holds the last evidence rows recorded since the store
	// opened (they never change), oldest first in order; a miss reads the
	// table.
	evidence map[string]Evidence
	order    []string
	next     int
	// earliest is, for each task whose outstanding capabilities were read
	// since the store opened, the earliest expiry among them, or earlier
	// (it is not moved later when one is redeemed): until then none is
	// due. The zero time marks a task with none outstanding. A task it
	// does not name is unknown: its due capabilities are read from the
	// table, and that read leaves its mark here. At most maxCached tasks
	// are named.
	earliest map[string]time.Time
	// issuedGen counts the commits that issued capabilities: a mark read
	// from the table is kept only if none committed meanwhile.
	issuedGen uint64
}

// maxEvidence bounds the evidence rows memory holds, maxCached the
// bindings and record versions.
const (
	maxEvidence = 1 << 16
	maxCached   = 1 << 18
)

// start makes memory ready to follow an exclusive store: empty, filled by
// what is read and committed, nothing read at start-up.
func (m *mirror) start() {
	m.usage, m.tasks, m.records = map[string]*usage{}, map[string]Task{}, map[string]string{}
	m.evidence, m.order, m.earliest = map[string]Evidence{}, make([]string, maxEvidence), map[string]time.Time{}
}

func (m *mirror) remember(e Evidence) {
	if _, ok := m.evidence[e.ReceiptID]; ok {
		return
	}
	if old := m.order[m.next]; old != "" {
		delete(m.evidence, old)
	}
	m.evidence[e.ReceiptID] = e
	m.order[m.next] = e.ReceiptID
	m.next = (m.next + 1) % maxEvidence
}

// add moves a counted task's usage by d; an uncounted task stays so, and
// is counted with d when it is.
func (m *mirror) add(d usageDelta) {
	if u := m.usage[d.task]; u != nil {
		u.add(d)
	}
}

func (u *usage) add(d usageDelta) {
	u.actions += d.sign
	u.minor[d.currency] += d.minor
}

// apply makes a committed batch's changes what readers see. The usage
// moves before the stamps: a reader that sees a stamp unchanged then never
// reads usage older than it.
func (s *Store) apply(c *batchChanges) {
	m := &s.mirror
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range c.usage {
		m.add(d)
	}
	// A written binding is dropped, not kept: memory holds only what
	// decisions read, and reads it again after a change.
	for _, task := range c.bindings {
		delete(m.tasks, BindingKey(task))
	}
	// A written version is kept: it is written when evidence of the
	// record is recorded, which is what a decision on it reads next.
	for _, r := range c.records {
		keep(m.records, r.key, r.version)
	}
	for _, e := range c.evidence {
		m.remember(e)
	}
	for _, i := range c.issued {
		// An unknown task stays unknown: it may hold capabilities
		// issued before the store opened that expire sooner.
		if at, ok := m.earliest[i.task]; ok && (at.IsZero() || i.expires.Before(at)) {
			m.earliest[i.task] = i.expires
		}
	}
	if len(c.issued) > 0 {
		m.issuedGen++
	}
	// Under mu: a reader filling memory after a miss checks that no
	// commit moved the key since it began to read.
	for _, k := range c.changes.touched {
		s.versions.slot(k).Add(1)
	}
}

// cached is whether a transaction reads through memory: an exclusive
// store's Read.
func (t *txn) cached() bool { return t.mirrored }

// keep holds v under k in one of memory's maps, which hold at most
// maxCached keys: a new key past that forgets an eighth of the others
// first, those a map's iteration, which starts at random, comes to
// first. Each then costs a read again; the rest, busy tasks' among them,
// stay rather than all of them being read again at once.
func keep[V any](cache map[string]V, k string, v V) {
	if _, ok := cache[k]; !ok && len(cache) >= maxCached {
		n := 0
		for old := range cache {
			if n == maxCached/8 {
				break
			}
			delete(cache, old)
			n++
		}
	}
	cache[k] = v
}

// readThrough returns what memory holds under k, or reads it (in a
// statement of its own, which sees every commit before it) and keeps it
// unless a commit moved k's stamp meanwhile. What read does not find is not
// kept.
func readThrough[V any](t *txn, cache map[string]V, k string, read func() (V, bool, error)) (V, bool, error) {
	m := &t.s.mirror
	m.mu.Lock()
	v, ok := cache[k]
	m.mu.Unlock()
	if ok {
		return v, true, nil
	}
	slot := t.s.versions.slot(k)
	at := slot.Load()
	v, found, err := read()
	if err != nil || !found {
		return v, found, err
	}
	m.mu.Lock()
	if slot.Load() == at {
		keep(cache, k, v)
	}
	m.mu.Unlock()
	return v, true, nil
}

// mirroredTask returns a task's binding through memory.
func (t *txn) mirroredTask(taskID string) (Task, bool, error) {
	return readThrough(t, t.s.mirror.tasks, BindingKey(taskID), func() (Task, bool, error) {
		var b Task
		err := t.QueryRowContext(t.ctx, `SELECT contract_item_id, agent FROM tasks WHERE task_id = ?`, taskID).Scan(&b.ItemID, &b.Agent)
		if errors.Is(err, sql.ErrNoRows) {
			return Task{}, false, nil
		}
		if err != nil {
			return Task{}, false, fmt.Errorf("task %q: %w", taskID, err)
		}
		return b, true, nil
	})
}

// mirroredRecord returns a record's version through memory ("" when none
// is recorded, which memory keeps too).
func (t *txn) mirroredRecord(source, key string) (string, error) {
	v, _, err := readThrough(t, t.s.mirror.records, RecordKey(source, key), func() (string, bool, error) {
		var v string
		err := t.QueryRowContext(t.ctx, `SELECT state_version FROM records WHERE source = ? AND record_key = ?`, source, key).Scan(&v)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return "", false, fmt.Errorf("record %s/%s: %w", source, key, err)
		}
		return v, true, nil
	})
	return v, err
}

// mirroredEvidence returns a recorded evidence row from memory if there.
func (t *txn) mirroredEvidence(receiptID string) (Evidence, bool) {
	m := &t.s.mirror
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.evidence[receiptID]
	return e, ok
}

// noneDue reports whether memory knows that none of a task's capabilities
// is due at now, and the count of commits that issued capabilities so far.
func (t *txn) noneDue(taskID string, now time.Time) (bool, uint64) {
	m := &t.s.mirror
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.earliest[taskID]
	return ok && (at.IsZero() || !at.Before(now)), m.issuedGen
}

// earliestQuery reads a task's earliest outstanding expiry through the
// index of capabilities by task, status and expiry.
var earliestQuery = `SELECT MIN(expires_at) FROM all_capabilities WHERE task_id = ? AND ` + isOutstanding

// moveEarliest sets memory's mark of a task with nothing due, whose mark
// has passed (the capabilities that set it were redeemed) or is unknown,
// to its earliest outstanding expiry, or to none; otherwise every decision
// on the task would read the table. gen is the count noneDue returned
// before the table was read: if a commit issued capabilities since, the
// mark stays as it is, early or unknown, which costs only a read.
func (t *txn) moveEarliest(taskID string, gen uint64) error {
	var at sql.NullString
	if err := t.QueryRowContext(t.ctx, earliestQuery, taskID).Scan(&at); err != nil {
		return fmt.Errorf("earliest expiry of task %q: %w", taskID, err)
	}
	m := &t.s.mirror
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.issuedGen != gen {
		return nil
	}
	var mark time.Time // none outstanding
	if at.Valid {
		mark = parseTS(at.String)
	}
	keep(m.earliest, taskID, mark)
	return nil
}

// Usage is what a task's capabilities use up as last committed: their
// number, and their sum in currency. Only an exclusive store knows it; on
// others it is zero and decisions read [Tx.Usage] in the writer. A task
// not counted since the store opened is counted first, in the writer.
func (s *Store) Usage(ctx context.Context, taskID, currency string) (count int32, sum int64, err error) {
	if s.pg != nil {
		return 0, 0, nil
	}
	count, sum, ok := s.committedUsage(taskID, currency)
	if ok {
		return count, sum, nil
	}
	if err := s.Update(ctx, func(tx Tx) error { _, _, err := tx.Usage(taskID, currency); return err }); err != nil {
		return 0, 0, err
	}
	if count, sum, ok = s.committedUsage(taskID, currency); !ok {
		// Never zero for a task not counted: that would grant its whole
		// allowance again.
		return 0, 0, fmt.Errorf("usage of task %q was not counted", taskID)
	}
	return count, sum, nil
}

// committedUsage is memory's count of a task's usage, if it holds one.
func (s *Store) committedUsage(taskID, currency string) (int32, int64, bool) {
	s.mirror.mu.Lock()
	defer s.mirror.mu.Unlock()
	u := s.mirror.usage[taskID]
	if u == nil {
		return 0, 0, false
	}
	return int32(u.actions), u.minor[currency], true
}

// exclusiveUsage is a task's usage on an exclusive store as this
// transaction sees it. A read counts the capabilities it sees. The writer
// adds what its batch changed so far to the committed usage, which memory
// holds; a task memory has not counted yet it counts from its
// capabilities, and keeps that count less the batch's changes as the
// committed usage: in the writer the table and memory agree, as no commit
// can come between them.
func (t *txn) exclusiveUsage(taskID string) (usage, error) {
	if !t.write {
		return t.countUsage(taskID)
	}
	// What this batch changed so far: the updates before this one, and
	// this one.
	var before []usageDelta
	if t.batch != nil {
		before = t.batch.usage
	}
	pending := usage{minor: map[string]int64{}}
	for _, ds := range [][]usageDelta{before, t.changes.usage} {
		for _, d := range ds {
			if d.task == taskID {
				pending.add(d)
			}
		}
	}
	m := &t.s.mirror
	m.mu.Lock()
	counted := m.usage[taskID]
	var committed usage
	if counted != nil {
		committed = counted.plus(usage{}, 1) // a copy
	}
	m.mu.Unlock()
	if counted == nil {
		seen, err := t.countUsage(taskID)
		if err != nil {
			return usage{}, err
		}
		committed = seen.plus(pending, -1)
		m.mu.Lock()
		if m.usage[taskID] == nil {
			m.usage[taskID] = &committed
		}
		m.mu.Unlock()
	}
	return committed.plus(pending, 1), nil
}

// plus is a copy of u with d added sign times (sign -1 subtracts it).
func (u usage) plus(d usage, sign int64) usage {
	out := usage{actions: u.actions + sign*d.actions, minor: maps.Clone(u.minor)}
	if out.minor == nil {
		out.minor = map[string]int64{}
	}
	for currency, minor := range d.minor {
		out.minor[currency] += sign * minor
	}
	return out
}

// CommittedHead is the journal's tree head as last committed by this
// process: an exclusive store's head.
func (s *Store) CommittedHead() journal.TreeHead {
	if h := s.mirror.head.Load(); h != nil {
		return *h
	}
	return journal.TreeHead{}
}

// Read runs fn over the committed state on the read connections, never the
// writer's, beside updates. It takes no snapshot: each read sees what was
// committed when it ran, and a reader that needs more checks its stamps
// ([Store.Versions]) in the update that acts on what it read. On an
// exclusive store it reads through memory.
func (s *Store) Read(ctx context.Context, fn func(tx Tx) error) error {
	tx := &txn{ctx: ctx, s: s, stmts: s.roStmts, mirrored: s.Exclusive(), settling: s.log != nil}
	defer func() { s.roStmts.PrepareAll(ctx, tx.unprepared) }()
	return fn(tx)
}
