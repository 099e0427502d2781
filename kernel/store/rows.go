package store

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/capability"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"google.golang.org/protobuf/proto"
)

// Task is a task's binding: its contract item and the one agent that acts
// on it.
type Task struct {
	ItemID string
	Agent  string
}

// BindTask binds a task to a contract item and an agent, replacing any
// earlier binding.
func (t *txn) BindTask(taskID string, b Task, at time.Time) error {
	_, err := t.ExecContext(t.ctx, `INSERT INTO tasks (task_id, contract_item_id, agent, bound_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET contract_item_id = excluded.contract_item_id, agent = excluded.agent, bound_at = excluded.bound_at`,
		taskID, b.ItemID, b.Agent, ts(at))
	if err != nil {
		return fmt.Errorf("bind task %q: %w", taskID, err)
	}
	t.touch(BindingKey(taskID))
	if t.s.pg == nil {
		t.changes.bindings = append(t.changes.bindings, taskID)
	}
	return nil
}

// Task returns a task's binding.
func (t *txn) Task(taskID string) (Task, error) {
	if t.cached() {
		b, ok, err := t.mirroredTask(taskID)
		if err == nil && !ok {
			err = fmt.Errorf("task %q: %w", taskID, ErrNotFound)
		}
		return b, err
	}
	var b Task
	err := t.QueryRowContext(t.ctx, `SELECT contract_item_id, agent FROM tasks WHERE task_id = ?`, taskID).Scan(&b.ItemID, &b.Agent)
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("task %q: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return b, fmt.Errorf("task %q: %w", taskID, err)
	}
	return b, nil
}

// BoundTask is one task's binding.
type BoundTask struct {
	TaskID string
	Task
}

// tasksQuery selects a page of bindings, by task id, after a task id and
// optionally of one agent or contract item: on SQLite and PostgreSQL alike
// one range of the primary key or of tasks_agent or tasks_item.
func tasksQuery(agent, itemID string) string {
	q := `SELECT task_id, contract_item_id, agent FROM tasks WHERE task_id > ?`
	if agent != "" {
		q += ` AND agent = ?`
	}
	if itemID != "" {
		q += ` AND contract_item_id = ?`
	}
	return q + ` ORDER BY task_id LIMIT ?`
}

// Tasks lists up to limit bindings whose task id sorts after after, in task
// id order, of agent and bound to itemID when those are not empty.
func (t *txn) Tasks(after, agent, itemID string, limit int) ([]BoundTask, error) {
	args := []any{after}
	if agent != "" {
		args = append(args, agent)
	}
	if itemID != "" {
		args = append(args, itemID)
	}
	rows, err := t.QueryContext(t.ctx, tasksQuery(agent, itemID), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	defer rows.Close()
	var out []BoundTask
	for rows.Next() {
		var b BoundTask
		if err := rows.Scan(&b.TaskID, &b.ItemID, &b.Agent); err != nil {
			return nil, fmt.Errorf("tasks: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// tasksBoundToQuery selects the tasks of one contract item, through
// tasks_item.
const tasksBoundToQuery = `SELECT task_id FROM tasks WHERE contract_item_id = ? ORDER BY task_id`

// TasksBoundTo lists the tasks bound to a contract item.
func (t *txn) TasksBoundTo(itemID string) ([]string, error) {
	return t.texts(fmt.Sprintf("tasks bound to %q", itemID), tasksBoundToQuery, itemID)
}

// RecordVersion returns the last state version observed for a record.
func (t *txn) RecordVersion(source, key string) (string, bool, error) {
	if t.cached() {
		v, err := t.mirroredRecord(source, key)
		return v, v != "", err
	}
	var v string
	record := source + "/" + key
	err := t.QueryRowContext(t.ctx, `SELECT state_version FROM records WHERE source = ? AND record_key = ?`, source, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("record %q: %w", record, err)
	}
	return v, true, nil
}

// SetRecordVersion notes a record's observed state version.
func (t *txn) SetRecordVersion(source, key, version string, at time.Time) error {
	_, err := t.ExecContext(t.ctx, `INSERT INTO records (source, record_key, state_version, seen_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (source, record_key) DO UPDATE SET state_version = excluded.state_version, seen_at = excluded.seen_at`,
		source, key, version, ts(at))
	if err != nil {
		return fmt.Errorf("record %s/%s: %w", source, key, err)
	}
	t.touch(RecordKey(source, key))
	if t.s.pg == nil {
		t.changes.records = append(t.changes.records, recordVersion{RecordKey(source, key), version})
	}
	return nil
}

// Evidence is a recorded evidence receipt.
type Evidence struct {
	ReceiptID string
	TaskID    string
	// EnvelopeHash pins the whole signed envelope (envelope.Digest).
	EnvelopeHash string
	Source       string
	RecordKey    string
	StateVersion string
	ReadAt       time.Time
}

// InsertEvidence records an evidence receipt; recording the same receipt
// twice is a no-op, a different one under the same id is refused.
func (t *txn) InsertEvidence(e Evidence) (inserted bool, err error) {
	res, err := t.ExecContext(t.ctx, `INSERT INTO evidence (receipt_id, task_id, envelope_hash, source, record_key, state_version, read_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (receipt_id) DO NOTHING`,
		e.ReceiptID, e.TaskID, e.EnvelopeHash, e.Source, e.RecordKey, e.StateVersion, ts(e.ReadAt))
	if err != nil {
		return false, fmt.Errorf("evidence %q: %w", e.ReceiptID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		if t.s.pg == nil {
			e.ReadAt = parseTS(ts(e.ReadAt)) // as a read returns it
			t.changes.evidence = append(t.changes.evidence, e)
		}
		return true, nil
	}
	prior, err := t.Evidence(e.ReceiptID)
	if err != nil {
		return false, err
	}
	if prior.EnvelopeHash != e.EnvelopeHash {
		return false, fmt.Errorf("evidence %q already recorded with other content", e.ReceiptID)
	}
	return false, nil
}

// NewerRead reports whether a read of the record later than at is already
// recorded: receipts can arrive out of order, and an older one must never
// move the record's state back.
func (t *txn) NewerRead(source, key string, at time.Time) (bool, error) {
	var n int
	err := t.QueryRowContext(t.ctx, `SELECT COUNT(*) FROM evidence WHERE source = ? AND record_key = ? AND read_at > ?`,
		source, key, ts(at)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("reads of %s/%s: %w", source, key, err)
	}
	return n > 0, nil
}

// Evidence returns a recorded evidence receipt.
func (t *txn) Evidence(receiptID string) (Evidence, error) {
	if t.cached() {
		if e, ok := t.mirroredEvidence(receiptID); ok {
			return e, nil
		}
	}
	e := Evidence{ReceiptID: receiptID}
	var readAt string
	err := t.QueryRowContext(t.ctx, `SELECT task_id, envelope_hash, source, record_key, state_version, read_at FROM evidence WHERE receipt_id = ?`,
		receiptID).Scan(&e.TaskID, &e.EnvelopeHash, &e.Source, &e.RecordKey, &e.StateVersion, &readAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Evidence{}, fmt.Errorf("evidence %q: %w", receiptID, ErrNotFound)
	}
	if err != nil {
		return Evidence{}, fmt.Errorf("evidence %q: %w", receiptID, err)
	}
	e.ReadAt = parseTS(readAt)
	return e, nil
}

// Capability is an issued capability and its commitment.
type Capability struct {
	CapabilityID      string
	DecisionID        string
	TaskID            string
	Record            string // "source/key" of the record the effect concerns
	StateVersion      string
	IdempotencyKey    string
	Tool              string
	Currency          string
	AmountMinor       int64
	Status            agentv1.CommitmentStatus
	EffectReceiptID   string
	ReadbackReceiptID string
	Note              string
	IssuedAt          time.Time
	ExpiresAt         time.Time
	ApprovalID        string
	// EffectHash identifies the one call the capability binds.
	EffectHash string
	// Holder is the agent the capability was issued to.
	Holder string
}

const capabilityColumns = `capability_id, decision_id, task_id, record, state_version, idempotency_key, tool, currency,
	amount_minor, status, effect_receipt_id, readback_receipt_id, note, issued_at, expires_at, approval_id, effect_hash, holder`

func scanCapability(row interface{ Scan(...any) error }) (Capability, error) {
	var c Capability
	var issued, expires string
	err := row.Scan(&c.CapabilityID, &c.DecisionID, &c.TaskID, &c.Record, &c.StateVersion, &c.IdempotencyKey, &c.Tool,
		&c.Currency, &c.AmountMinor, &c.Status, &c.EffectReceiptID, &c.ReadbackReceiptID, &c.Note, &issued, &expires, &c.ApprovalID, &c.EffectHash, &c.Holder)
	c.IssuedAt, c.ExpiresAt = parseTS(issued), parseTS(expires)
	return c, err
}

// InsertCapability records an issued capability. Its row is stored with
// the other updates' of its group commit (see batchSQL), before any later
// statement runs.
func (t *txn) InsertCapability(c Capability) error {
	if t.sql == nil {
		return fmt.Errorf("capability %q: inserted outside an update", c.CapabilityID)
	}
	t.deferred.caps = append(t.deferred.caps, c)
	t.outstanding(c)
	if capability.Counts(c.Status) {
		return t.use(c, 1)
	}
	return nil
}

// outstanding notes the expiry of a capability that is (again) authorised.
func (t *txn) outstanding(c Capability) {
	if t.s.pg == nil && c.Status == agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED {
		t.changes.issued = append(t.changes.issued, issued{c.TaskID, c.ExpiresAt})
	}
}

// Capability returns one capability.
func (t *txn) Capability(id string) (Capability, error) {
	c, err := scanCapability(t.QueryRowContext(t.ctx, `SELECT `+capabilityColumns+` FROM all_capabilities WHERE capability_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Capability{}, fmt.Errorf("capability %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Capability{}, fmt.Errorf("capability %q: %w", id, err)
	}
	return c, nil
}

// UpdateCapability writes a capability's commitment fields, and its task's
// usage when the capability stops or starts counting.
func (t *txn) UpdateCapability(c Capability) error {
	if err := t.moveCapability(c.CapabilityID); err != nil {
		return err
	}
	var was agentv1.CommitmentStatus
	err := t.QueryRowContext(t.ctx, `SELECT status FROM capabilities WHERE capability_id = ?`, c.CapabilityID).Scan(&was)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("capability %q: %w", c.CapabilityID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("capability %q: %w", c.CapabilityID, err)
	}
	_, err = t.ExecContext(t.ctx, `UPDATE capabilities SET status = ?, effect_receipt_id = ?, readback_receipt_id = ?, note = ?
		WHERE capability_id = ?`, c.Status, c.EffectReceiptID, c.ReadbackReceiptID, c.Note, c.CapabilityID)
	if err != nil {
		return fmt.Errorf("capability %q: %w", c.CapabilityID, err)
	}
	if was != c.Status {
		t.outstanding(c)
	}
	switch {
	case capability.Counts(was) && !capability.Counts(c.Status):
		return t.use(c, -1)
	case !capability.Counts(was) && capability.Counts(c.Status):
		return t.use(c, 1)
	}
	return nil
}

// taskCapabilitiesQuery reads one task's capabilities through the index by
// task.
var taskCapabilitiesQuery = `SELECT ` + capabilityColumns + ` FROM all_capabilities WHERE task_id = ? ORDER BY issued_at, capability_id`

// Capabilities lists a task's capabilities, oldest first (every task's:
// CapabilitiesAfter, a page at a time).
func (t *txn) Capabilities(taskID string) ([]Capability, error) {
	return t.capabilities(fmt.Sprintf("capabilities of task %q", taskID), taskCapabilitiesQuery, taskID)
}

// CapabilitiesAfter lists at most limit capabilities whose identifier
// sorts after after, in the identifiers' order: a task's, or every task's
// when taskID is empty. The kernel's identifiers begin with the
// millisecond they were made, so this is the order of issue to the
// millisecond, and the primary key answers a page without sorting the
// table.
func (t *txn) CapabilitiesAfter(taskID, after string, limit int) ([]Capability, error) {
	q, args := `SELECT `+capabilityColumns+` FROM all_capabilities WHERE capability_id > ?`, []any{after}
	if taskID != "" {
		q, args = q+` AND task_id = ?`, append(args, taskID)
	}
	return t.capabilities("capabilities", q+` ORDER BY capability_id LIMIT ?`, append(args, limit)...)
}

// capabilities runs a query of capability rows; what names them in an
// error.
func (t *txn) capabilities(what, query string, args ...any) ([]Capability, error) {
	rows, err := t.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []Capability
	for rows.Next() {
		c, err := scanCapability(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// use adds (sign 1) or removes (sign -1) a capability from its task's
// usage: in the table other replicas read, or, on an exclusive store, in
// memory once the update commits (see Store.Usage).
func (t *txn) use(c Capability, sign int64) error {
	if t.s.pg == nil {
		t.changes.usage = append(t.changes.usage, usageDelta{task: c.TaskID, currency: c.Currency, sign: sign, minor: sign * c.AmountMinor})
		return nil
	}
	_, err := t.ExecContext(t.ctx, `INSERT INTO task_usage (task_id, currency, actions, amount_minor) VALUES (?, ?, ?, ?)
		ON CONFLICT (task_id, currency) DO UPDATE SET actions = task_usage.actions + excluded.actions, amount_minor = task_usage.amount_minor + excluded.amount_minor`,
		c.TaskID, c.Currency, sign, sign*c.AmountMinor)
	if err != nil {
		return fmt.Errorf("usage of task %q: %w", c.TaskID, err)
	}
	return nil
}

// ExpireDue marks a task's unredeemed capabilities past their expiry as
// expired: an unredeemed capability stops counting when it can no longer
// be used. Readers that cannot write see the same through
// capability.Effective, or subtract what Due lists.
func (t *txn) ExpireDue(taskID string, now time.Time) error {
	expired, err := t.Due(taskID, now)
	if err != nil {
		return err
	}
	for _, c := range expired {
		c.Status = agentv1.CommitmentStatus_COMMITMENT_STATUS_EXPIRED
		c.Note = "expired before it was redeemed"
		if err := t.UpdateCapability(c); err != nil {
			return err
		}
	}
	return nil
}

// dueQuery selects a task's outstanding capabilities past their expiry.
var dueQuery = `SELECT ` + capabilityColumns + ` FROM all_capabilities WHERE task_id = ? AND ` + isOutstanding + ` AND expires_at < ?`

// Due lists a task's unredeemed capabilities past their expiry at now:
// those ExpireDue would mark.
func (t *txn) Due(taskID string, now time.Time) ([]Capability, error) {
	var gen uint64
	if t.cached() {
		var none bool
		if none, gen = t.noneDue(taskID, now); none {
			return nil, nil
		}
	}
	due, err := t.due(taskID, now)
	if err != nil || !t.cached() || len(due) > 0 {
		// Due capabilities keep the mark until they are marked expired.
		return due, err
	}
	return nil, t.moveEarliest(taskID, gen)
}

func (t *txn) due(taskID string, now time.Time) ([]Capability, error) {
	return t.capabilities(fmt.Sprintf("expired capabilities of task %q", taskID), dueQuery, taskID, ts(now))
}

// Usage counts the capabilities that use up a task's grant and sums their
// amounts in currency. It reads the task's counters as they stand: run
// ExpireDue first in a write transaction, or subtract what Effective calls
// expired.
func (t *txn) Usage(taskID, currency string) (count int32, sum int64, err error) {
	if t.s.pg == nil {
		u, err := t.exclusiveUsage(taskID)
		if err != nil {
			return 0, 0, err
		}
		return int32(u.actions), u.minor[currency], nil
	}
	err = t.QueryRowContext(t.ctx, `SELECT COALESCE(SUM(actions), 0), COALESCE(SUM(CASE WHEN currency = ? THEN amount_minor ELSE 0 END), 0)
		FROM task_usage WHERE task_id = ?`, currency, taskID).Scan(&count, &sum)
	if err != nil {
		return 0, 0, fmt.Errorf("usage of task %q: %w", taskID, err)
	}
	return count, sum, nil
}

// usageQuery counts a task's capabilities that use up its grant, by
// currency, from the index by task alone.
var usageQuery = fmt.Sprintf(`SELECT currency, COUNT(*), SUM(amount_minor) FROM all_capabilities
	WHERE task_id = ? AND status NOT IN (%d, %d, %d) GROUP BY currency`, capability.Revoked, capability.Expired, capability.Refused)

// countUsage counts a task's usage from its capabilities as this
// transaction sees them.
func (t *txn) countUsage(taskID string) (usage, error) {
	u := usage{minor: map[string]int64{}}
	rows, err := t.QueryContext(t.ctx, usageQuery, taskID)
	if err != nil {
		return usage{}, fmt.Errorf("usage of task %q: %w", taskID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var currency string
		var n, minor int64
		if err := rows.Scan(&currency, &n, &minor); err != nil {
			return usage{}, fmt.Errorf("usage of task %q: %w", taskID, err)
		}
		u.actions += n
		u.minor[currency] += minor
	}
	if err := rows.Err(); err != nil {
		return usage{}, fmt.Errorf("usage of task %q: %w", taskID, err)
	}
	return u, nil
}

// Request is the recorded answer to a proposal submitted with a request id.
type Request struct {
	TaskID, RequestID, Agent string
	// CallHash identifies the call the answer was for.
	CallHash string
	// Response is the marshalled answer.
	Response []byte
	At       time.Time
}

const (
	insertRequestQuery = `INSERT INTO requests (task_id, request_id, agent, call_hash, response, at) VALUES (?, ?, ?, ?, ?, ?)`
	requestQuery       = `SELECT agent, call_hash, response, at FROM requests WHERE task_id = ? AND request_id = ?`
)

// InsertRequest records the answer to a request id. An update that may
// yet be acknowledged from the log file defers its row, as it does a
// capability's, having looked for the request id where the row's unique
// key would (ErrDuplicate when it is taken).
func (t *txn) InsertRequest(r Request) error {
	if t.logging() {
		_, err := t.loggedRequest(r.TaskID, r.RequestID)
		if err == nil {
			return fmt.Errorf("request %q of task %q: %w", r.RequestID, r.TaskID, ErrDuplicate)
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		t.deferred.reqs = append(t.deferred.reqs, r)
		return nil
	}
	return insertRequests(t, []Request{r})
}

// insertRequests stores answers to request ids, a statement each.
func insertRequests(t *txn, rs []Request) error {
	for _, r := range rs {
		if _, err := t.ExecContext(t.ctx, insertRequestQuery, r.TaskID, r.RequestID, r.Agent, r.CallHash, r.Response, ts(r.At)); err != nil {
			return fmt.Errorf("request %q of task %q: %w", r.RequestID, r.TaskID, err)
		}
	}
	return nil
}

// logging says whether t is an update whose batch has run no statement
// yet at durability normal: one that may be acknowledged from the log
// file, whose reads of request ids must not begin a transaction.
func (t *txn) logging() bool {
	return t.sql != nil && t.s.log != nil && t.sql.tx == nil && t.sql.beginErr == nil
}

// loggedRequest finds the answer to a request id for an update that may
// be acknowledged from the log file, without a statement of its own: in
// the rows it and its batch deferred, then in the batches acknowledged and
// not yet in SQLite, then in SQLite through the writer's read connection.
// Only the writer acknowledges, and a batch leaves memory once SQLite
// holds it, so one acknowledged before is found in one place or the
// other. ErrNotFound when it is in none.
func (t *txn) loggedRequest(taskID, requestID string) (Request, error) {
	for _, rs := range [][]Request{t.deferred.reqs, t.sql.deferred.reqs} {
		for _, r := range rs {
			if r.TaskID == taskID && r.RequestID == requestID {
				return r, nil
			}
		}
	}
	if r, ok := t.s.queuedRequest(taskID, requestID); ok {
		return r, nil
	}
	return scanRequest(t.s.lookup.QueryRowContext(t.ctx, requestQuery, taskID, requestID), taskID, requestID)
}

// Request returns the recorded answer to a request id.
func (t *txn) Request(taskID, requestID string) (Request, error) {
	if t.logging() {
		return t.loggedRequest(taskID, requestID)
	}
	return scanRequest(t.QueryRowContext(t.ctx, requestQuery, taskID, requestID), taskID, requestID)
}

// scanRequest reads the answer to a request id from row.
func scanRequest(row *sql.Row, taskID, requestID string) (Request, error) {
	r := Request{TaskID: taskID, RequestID: requestID}
	var at string
	err := row.Scan(&r.Agent, &r.CallHash, &r.Response, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Request{}, fmt.Errorf("request %q of task %q: %w", requestID, taskID, ErrNotFound)
	}
	if err != nil {
		return Request{}, fmt.Errorf("request %q of task %q: %w", requestID, taskID, err)
	}
	r.At = parseTS(at)
	return r, nil
}

// outstandingQuery selects the outstanding capabilities on record or of
// taskID (those non-empty): one search per key, each on its index of
// outstanding capabilities.
func outstandingQuery(record, taskID string) (string, []any) {
	var parts []string
	var args []any
	for _, by := range [...]struct{ col, v string }{{"record", record}, {"task_id", taskID}} {
		if by.v != "" {
			parts = append(parts, `SELECT `+capabilityColumns+` FROM all_capabilities WHERE `+isOutstanding+` AND `+by.col+` = ?`)
			args = append(args, by.v)
		}
	}
	if len(parts) == 0 {
		return "", nil
	}
	return strings.Join(parts, ` UNION `) + ` ORDER BY issued_at, capability_id`, args
}

// Outstanding lists capabilities not yet redeemed, for a record or for a
// task (whichever is non-empty).
func (t *txn) Outstanding(record, taskID string) ([]Capability, error) {
	query, args := outstandingQuery(record, taskID)
	if query == "" {
		return nil, nil
	}
	return t.capabilities("outstanding capabilities", query, args...)
}

// Approval is one approval row; Body is the full message.
type Approval struct {
	Body       *kernelv1.Approval
	EffectHash string
	Record     string
}

// InsertApproval records a pending approval.
func (t *txn) InsertApproval(a Approval) error {
	body, err := proto.Marshal(a.Body)
	if err != nil {
		return err
	}
	_, err = t.ExecContext(t.ctx, `INSERT INTO approvals (approval_id, task_id, decision_id, effect_hash, record, state, decided_by, note, requested_at, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.Body.GetApprovalId(), a.Body.GetTaskId(), a.Body.GetDecisionId(), a.EffectHash, a.Record,
		a.Body.GetState(), a.Body.GetDecidedBy(), a.Body.GetNote(), ts(a.Body.GetRequestedAt().AsTime()), body)
	if err != nil {
		return fmt.Errorf("approval %q: %w", a.Body.GetApprovalId(), err)
	}
	return nil
}

// UpdateApproval writes an approval's state.
func (t *txn) UpdateApproval(a Approval) error {
	body, err := proto.Marshal(a.Body)
	if err != nil {
		return err
	}
	_, err = t.ExecContext(t.ctx, `UPDATE approvals SET state = ?, decided_by = ?, note = ?, body = ? WHERE approval_id = ?`,
		a.Body.GetState(), a.Body.GetDecidedBy(), a.Body.GetNote(), body, a.Body.GetApprovalId())
	if err != nil {
		return fmt.Errorf("approval %q: %w", a.Body.GetApprovalId(), err)
	}
	return nil
}

// Approval returns one approval.
func (t *txn) Approval(id string) (Approval, error) {
	rows, err := t.approvals(`WHERE approval_id = ?`, id)
	if err != nil {
		return Approval{}, err
	}
	if len(rows) == 0 {
		return Approval{}, fmt.Errorf("approval %q: %w", id, ErrNotFound)
	}
	return rows[0], nil
}

// ApprovalsAfter lists at most limit approvals in a state whose
// identifier sorts after after, in the identifiers' order. The kernel's
// identifiers begin with the millisecond they were made, so this is the
// order of asking to the millisecond, and approvals_state answers a page
// without reading the approvals of other states.
func (t *txn) ApprovalsAfter(state kernelv1.ApprovalState, after string, limit int) ([]Approval, error) {
	return t.approvalRows(approvalsAfterQuery, state, after, limit)
}

const approvalsAfterQuery = `SELECT body, effect_hash, record FROM approvals WHERE state = ? AND approval_id > ? ORDER BY approval_id LIMIT ?`

// OpenApprovals lists pending or approved approvals for a record or task.
func (t *txn) OpenApprovals(record, taskID string) ([]Approval, error) {
	return t.approvals(`WHERE state IN (?, ?) AND ((? != '' AND record = ?) OR (? != '' AND task_id = ?))`,
		kernelv1.ApprovalState_APPROVAL_STATE_PENDING, kernelv1.ApprovalState_APPROVAL_STATE_APPROVED, record, record, taskID, taskID)
}

func (t *txn) approvals(where string, args ...any) ([]Approval, error) {
	return t.approvalRows(`SELECT body, effect_hash, record FROM approvals `+where+` ORDER BY requested_at, approval_id`, args...)
}

// approvalRows runs a query of approvals' body, effect_hash and record.
func (t *txn) approvalRows(query string, args ...any) ([]Approval, error) {
	rows, err := t.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		var body []byte
		a := Approval{Body: &kernelv1.Approval{}}
		if err := rows.Scan(&body, &a.EffectHash, &a.Record); err != nil {
			return nil, fmt.Errorf("approvals: %w", err)
		}
		if err := proto.Unmarshal(body, a.Body); err != nil {
			return nil, fmt.Errorf("approvals: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// The records to watch, of every agent's tasks or of one agent's: those
// read or noted recently, with the state version the kernel holds, and
// those that open work depends on (an open approval, or an outstanding
// capability that has not expired). Each part reads an index of what is
// recent or open, never the whole history.
var (
	seenQuery        = `SELECT source, record_key, state_version FROM records WHERE seen_at >= ?`
	seenOfAgentQuery = `
		SELECT e.source, e.record_key, COALESCE(r.state_version, '') FROM evidence e
		JOIN tasks k ON k.task_id = e.task_id
		LEFT JOIN records r ON r.source = e.source AND r.record_key = e.record_key
		WHERE k.agent = ? AND e.read_at >= ?`
	dependedOfAgentQuery = `
		SELECT c.record FROM all_capabilities c JOIN tasks k ON k.task_id = c.task_id
			WHERE k.agent = ? AND c.` + isOutstanding + ` AND c.expires_at >= ? AND c.record != ''
		UNION SELECT a.record FROM approvals a JOIN tasks k ON k.task_id = a.task_id WHERE k.agent = ? AND a.` + isOpenApproval + ` AND a.record != ''`
)

// Of every agent's tasks, the records moved capabilities depend on are
// read from the index of outstanding capabilities by record, one of two
// ways. Many capabilities on few records (an agent that proposes again
// and again and does not execute) are read one record at a time: each
// step seeks the first record after the last (a loose index scan) and one
// more search finds the record's latest expiry, so the poll costs the
// records, not the capabilities. Capabilities on many records are read in
// one pass over the index, grouped by record, which costs less a
// capability than two searches a record: once the steps have found more
// than dependedSteps records, the poll reads them so. (Capabilities past
// their expiry stay outstanding until their task's next decision marks
// them expired; their records are passed over either way.)
var (
	dependedStepsQuery = `
		WITH RECURSIVE depended (record, step) AS (
			SELECT MIN(record), 1 FROM capabilities WHERE ` + isOutstanding + ` AND record > ''
			UNION ALL
			SELECT (SELECT MIN(c.record) FROM capabilities c WHERE c.` + isOutstanding + ` AND c.record > d.record), d.step + 1
			FROM depended d WHERE d.record IS NOT NULL AND d.step <= ?)
		SELECT d.record, (SELECT MAX(c.expires_at) FROM capabilities c WHERE c.` + isOutstanding + ` AND c.record = d.record)
		FROM depended d WHERE d.record IS NOT NULL`
	dependedScanQuery = `
		SELECT record FROM capabilities WHERE ` + isOutstanding + ` AND record > ''
		GROUP BY record HAVING MAX(expires_at) >= ?`
	// dependedRestQuery: the capabilities waiting to move (pending.go)
	// and the open approvals.
	dependedRestQuery = `
		SELECT record FROM capabilities_pending WHERE ` + isOutstanding + ` AND record != '' AND expires_at >= ?
		UNION SELECT record FROM approvals WHERE ` + isOpenApproval + ` AND record != ''`
)

// dependedSteps is how many records the loose scan reads before the poll
// reads the index in one pass instead: at most about 1.5 ms of searches
// on this machine's kind.
var dependedSteps = 1024

// dependedRecords lists the records that outstanding capabilities not
// expired at now, or open approvals, depend on: of every agent's tasks,
// or of one agent's. It may list one twice.
func (t *txn) dependedRecords(now time.Time, agent string) ([]string, error) {
	at := ts(now)
	if agent != "" {
		return t.texts("records depended on by agent "+agent, dependedOfAgentQuery, agent, at, agent)
	}
	rest, err := t.texts("records pending capabilities and approvals depend on", dependedRestQuery, at)
	if err != nil {
		return nil, err
	}
	rows, err := t.QueryContext(t.ctx, dependedStepsQuery, dependedSteps)
	if err != nil {
		return nil, fmt.Errorf("watched records: %w", err)
	}
	var records []string
	steps := 0
	for rows.Next() {
		var record, expires string
		if err := rows.Scan(&record, &expires); err != nil {
			rows.Close()
			return nil, fmt.Errorf("watched records: %w", err)
		}
		steps++
		if expires >= at {
			records = append(records, record)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("watched records: %w", err)
	}
	if steps > dependedSteps {
		if records, err = t.texts("records capabilities depend on", dependedScanQuery, at); err != nil {
			return nil, err
		}
	}
	return append(records, rest...), nil
}

// texts runs query and returns its rows' one text column; what names
// them in an error.
func (t *txn) texts(what, query string, args ...any) ([]string, error) {
	rows, err := t.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// watchedByAgentQuery asks whether one agent's tasks read a record since a
// time, or hold an outstanding capability not yet expired or an open
// approval on it: one indexed search each, whatever the agent's other
// work.
var watchedByAgentQuery = `
	SELECT EXISTS (SELECT 1 FROM evidence e JOIN tasks k ON k.task_id = e.task_id
		WHERE e.source = ? AND e.record_key = ? AND e.read_at >= ? AND k.agent = ?)
	OR EXISTS (SELECT 1 FROM all_capabilities c JOIN tasks k ON k.task_id = c.task_id
		WHERE c.record = ? AND c.` + isOutstanding + ` AND c.expires_at >= ? AND k.agent = ?)
	OR EXISTS (SELECT 1 FROM approvals a JOIN tasks k ON k.task_id = a.task_id
		WHERE a.record = ? AND a.` + isOpenApproval + ` AND k.agent = ?)`

// WatchedBy reports whether agent's tasks watch the record: whether it is
// among [Tx.WatchedRecords] of agent.
func (t *txn) WatchedBy(since, now time.Time, agent, source, key string) (bool, error) {
	var ok bool
	record := source + "/" + key
	err := t.QueryRowContext(t.ctx, watchedByAgentQuery, source, key, ts(since), agent, record, ts(now), agent, record, agent).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("record %s watched by %s: %w", record, agent, err)
	}
	return ok, nil
}

// Watched is a record whose changes still matter, and its state version
// as the kernel holds it ("" when it holds none).
type Watched struct {
	Source, Key, StateVersion string
}

// WatchedRecords lists the records whose changes still matter, ordered by
// source, then key: those read or noted since since, and those that
// outstanding capabilities not expired at now, or open approvals, depend
// on; of every agent's tasks, or of one agent's. The versions of the
// records read recently come with them; those of the records that open
// work alone depends on are looked up together (recordVersions).
func (t *txn) WatchedRecords(since, now time.Time, agent string) ([]Watched, error) {
	seen, args := seenQuery, []any{ts(since)}
	if agent != "" {
		seen, args = seenOfAgentQuery, []any{agent, ts(since)}
	}
	// A poll reads every record in the window: sorted and searched in a
	// slice, without a name made per record to key a map or sort by.
	var out []Watched
	rows, err := t.QueryContext(t.ctx, seen, args...)
	if err != nil {
		return nil, fmt.Errorf("watched records: %w", err)
	}
	for rows.Next() {
		var w Watched
		if err := rows.Scan(&w.Source, &w.Key, &w.StateVersion); err != nil {
			rows.Close()
			return nil, fmt.Errorf("watched records: %w", err)
		}
		out = append(out, w)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("watched records: %w", err)
	}
	slices.SortFunc(out, compareWatched)
	// One agent's tasks may have read a record more than once.
	out = slices.CompactFunc(out, sameRecord)
	depended, err := t.dependedRecords(now, agent)
	if err != nil {
		return nil, err
	}
	// Open work may depend on a record more than once, or on one read
	// lately.
	var others []Watched
	for _, r := range depended {
		var w Watched
		w.Source, w.Key = SplitRecord(r)
		if _, seen := slices.BinarySearchFunc(out, w, compareWatched); !seen {
			others = append(others, w)
		}
	}
	if len(others) == 0 {
		return out, nil
	}
	slices.SortFunc(others, compareWatched)
	others = slices.CompactFunc(others, sameRecord)
	if err := t.recordVersions(others); err != nil {
		return nil, err
	}
	out = append(out, others...)
	slices.SortFunc(out, compareWatched)
	return out, nil
}

// versionsBatch is how many records recordVersions looks up in one
// statement.
const versionsBatch = 256

// versionsQuery selects the versions of n records, each given as its
// source and key.
func versionsQuery(n int) string {
	return `SELECT source, record_key, state_version FROM records WHERE (source, record_key) IN (VALUES ` +
		strings.Repeat("(?, ?), ", n-1) + `(?, ?))`
}

// recordVersions sets the version the kernel holds of each of ws, sorted
// by compareWatched ("" for a record it holds none of), versionsBatch
// records a statement: a record that open work alone depends on costs a
// search of the records' key, not a statement of its own.
func (t *txn) recordVersions(ws []Watched) error {
	for batch := range slices.Chunk(ws, versionsBatch) {
		args := make([]any, 0, 2*len(batch))
		for _, w := range batch {
			args = append(args, w.Source, w.Key)
		}
		rows, err := t.QueryContext(t.ctx, versionsQuery(len(batch)), args...)
		if err != nil {
			return fmt.Errorf("watched records' versions: %w", err)
		}
		for rows.Next() {
			var r Watched
			if err := rows.Scan(&r.Source, &r.Key, &r.StateVersion); err != nil {
				rows.Close()
				return fmt.Errorf("watched records' versions: %w", err)
			}
			if i, ok := slices.BinarySearchFunc(batch, r, compareWatched); ok {
				batch[i].StateVersion = r.StateVersion
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("watched records' versions: %w", err)
		}
	}
	return nil
}

// SplitRecord splits a record's name, "source/key" (as capabilities and
// approvals name the record they depend on), at its first "/": no source
// name contains one (contracts and the evidence adapter refuse it), while a
// key may.
func SplitRecord(record string) (source, key string) {
	source, key, _ = strings.Cut(record, "/")
	return source, key
}

// sameRecord reports whether a and b name one record.
func sameRecord(a, b Watched) bool { return a.Source == b.Source && a.Key == b.Key }

// compareWatched orders watched records by source, then key.
func compareWatched(a, b Watched) int {
	return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Key, b.Key))
}
