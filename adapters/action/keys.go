package action

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// State is where an idempotency key's effect stands.
type State int

// States of a key. There is no state before Started: a key without a row
// has had no attempt.
const (
	// Started: an attempt at the effect may have begun; whether it
	// happened is decided by the executor's target (see [Effect]).
	Started State = iota + 1
	// Done: the effect happened and its signed receipt is stored, or its
	// target refused it and the signed refusal receipt is (see
	// [Entry.Refused]).
	Done
)

func (s State) String() string {
	switch s {
	case Started:
		return "started"
	case Done:
		return "done"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Entry is one idempotency key's row.
type Entry struct {
	Key          string
	CapabilityID string
	TaskID       string
	Tool         string
	// CallHash identifies the call (toolcall.Call.Hash): a key serves one
	// call only.
	CallHash string
	// EffectID is the effect's own id, fixed when the attempt starts so
	// that a resent attempt carries the same one; it is also the effect
	// receipt's id.
	EffectID  string
	State     State
	StartedAt time.Time
	// Receipt is the signed effect receipt once Done.
	Receipt *receiptv1.Envelope
	// Recorded is true once the kernel has logged Receipt.
	Recorded bool
}

// refusalType is the payload type of a refusal receipt.
var refusalType = string((&receiptv1.RefusalReceipt{}).ProtoReflect().Descriptor().FullName())

// Refused reports whether the key is Done with a refusal receipt: its
// target refused the effect and holds nothing of it.
func (e Entry) Refused() bool { return e.State == Done && e.Receipt.GetPayloadType() == refusalType }

// Errors of the key table, matched with errors.Is.
var (
	// ErrKeyTaken means a row for the key already exists; nothing was
	// written.
	ErrKeyTaken = errors.New("idempotency key already has a row")
	// ErrNotStarted means the key is not Started (another process
	// finished it first); nothing was written.
	ErrNotStarted = errors.New("idempotency key is not started")
)

// Keys is the adapter's own durable table of idempotency keys: each key is
// written Started before its effect is attempted and Done, with the signed
// effect receipt, after. It is safe for concurrent use.
type Keys struct {
	db *sql.DB
	// q runs the table's statements prepared once.
	q *sqldb.Prepared
}

// The table's name is prefixed so that it cannot collide with a table of
// an executor's target sharing the database. The same statements serve
// both databases but for the receipt's type, blob: SQLite's BLOB,
// PostgreSQL's BYTEA.
func keysSchema(blob string) []string {
	return []string{`
CREATE TABLE IF NOT EXISTS ambit_effect_keys (
	idempotency_key TEXT PRIMARY KEY,
	capability_id   TEXT NOT NULL,
	task_id         TEXT NOT NULL,
	tool            TEXT NOT NULL,
	call_hash       TEXT NOT NULL,
	effect_id       TEXT NOT NULL UNIQUE,
	state           TEXT NOT NULL CHECK (state IN ('started', 'done')),
	started_at      TEXT NOT NULL,
	receipt         ` + blob + `,
	recorded        INTEGER NOT NULL DEFAULT 0
)`, `
CREATE INDEX IF NOT EXISTS ambit_effect_keys_unrecorded ON ambit_effect_keys (started_at)
	WHERE state = 'done' AND recorded = 0`}
}

// keysLock is the advisory lock that serialises adapters creating the
// table in one PostgreSQL database at start-up: CREATE TABLE IF NOT
// EXISTS is not safe against itself there.
const keysLock = 0x616d6269_74000101

// OpenKeys creates the table in db (an sqldb.Open database) if needed.
func OpenKeys(ctx context.Context, db *sql.DB) (*Keys, error) {
	pg := sqldb.IsPostgresDB(db)
	blob := "BLOB"
	if pg {
		blob = "BYTEA"
	}
	k := &Keys{db: db, q: sqldb.NewPrepared(db)}
	err := k.Tx(ctx, func(tx *sql.Tx) error {
		if pg {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(keysLock)); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		for _, stmt := range keysSchema(blob) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create idempotency key table: %w", err)
	}
	return k, nil
}

// Check reads the table: the adapter can do nothing while it cannot.
func (k *Keys) Check(ctx context.Context) error {
	return probe(ctx, k.db, `SELECT 1 FROM ambit_effect_keys LIMIT 1`)
}

// probe runs query, which selects at most one row; no row is success.
func probe(ctx context.Context, db *sql.DB, query string) error {
	var one any
	if err := db.QueryRowContext(ctx, query).Scan(&one); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return nil
}

// DB is the database the table lives in.
func (k *Keys) DB() *sql.DB { return k.db }

// Get returns the key's row; found is false when it has none.
func (k *Keys) Get(ctx context.Context, key string) (e Entry, found bool, err error) {
	e, err = scanEntry(k.q.QueryRowContext(ctx, selectEntry+` WHERE idempotency_key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("idempotency key %q: %w", key, err)
	}
	return e, true, nil
}

// Start writes e as Started before its effect is attempted. When the key
// already has a row the error is [ErrKeyTaken]: the PRIMARY KEY, not a
// prior lookup, keeps a key to one attempt. Of two attempts at once, the
// second waits for the first to commit (PostgreSQL) or for the database's
// one writer (SQLite), then finds the key taken.
func (k *Keys) Start(ctx context.Context, e Entry) error {
	return k.insert(ctx, k.q, e, Started, nil)
}

// StartDone writes e as Done with its receipt within tx, the transaction
// that also writes the effect (an sql executor sharing this database).
// When the key already has a row the error is [ErrKeyTaken].
func (k *Keys) StartDone(ctx context.Context, tx *sql.Tx, e Entry, receipt *receiptv1.Envelope) error {
	return k.insert(ctx, k.q.In(tx), e, Done, receipt)
}

// Settle writes e as Done with its receipt when no attempt wrote the key:
// a refusal, after the transaction that would have written the effect and
// the key together rolled back. When the key already has a row the error
// is [ErrKeyTaken].
func (k *Keys) Settle(ctx context.Context, e Entry, receipt *receiptv1.Envelope) error {
	return k.insert(ctx, k.q, e, Done, receipt)
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (k *Keys) insert(ctx context.Context, db execer, e Entry, state State, receipt *receiptv1.Envelope) error {
	var blob []byte
	if receipt != nil {
		var err error
		if blob, err = (proto.MarshalOptions{Deterministic: true}).Marshal(receipt); err != nil {
			return fmt.Errorf("idempotency key %q: receipt: %w", e.Key, err)
		}
	}
	// DO NOTHING rather than an error: on PostgreSQL an error would end
	// the transaction StartDone shares with the effect.
	res, err := db.ExecContext(ctx, `INSERT INTO ambit_effect_keys (idempotency_key, capability_id, task_id, tool,
		call_hash, effect_id, state, started_at, receipt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (idempotency_key) DO NOTHING`,
		e.Key, e.CapabilityID, e.TaskID, e.Tool, e.CallHash, e.EffectID, state.String(),
		e.StartedAt.UTC().Format(time.RFC3339Nano), blob)
	if err != nil {
		return fmt.Errorf("write idempotency key %q: %w", e.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("write idempotency key %q: %w", e.Key, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q", ErrKeyTaken, e.Key)
	}
	return nil
}

// Finish moves a Started key to Done with its receipt; a key that is not
// Started is [ErrNotStarted].
func (k *Keys) Finish(ctx context.Context, key string, receipt *receiptv1.Envelope) error {
	blob, err := (proto.MarshalOptions{Deterministic: true}).Marshal(receipt)
	if err != nil {
		return fmt.Errorf("finish idempotency key %q: receipt: %w", key, err)
	}
	res, err := k.q.ExecContext(ctx, `UPDATE ambit_effect_keys SET state = 'done', receipt = ?
		WHERE idempotency_key = ? AND state = 'started'`, blob, key)
	if err != nil {
		return fmt.Errorf("finish idempotency key %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("finish idempotency key %q: %w", key, err)
	}
	if n != 1 {
		return fmt.Errorf("finish idempotency key %q: %w", key, ErrNotStarted)
	}
	return nil
}

// Abandon removes the Started row of the attempt effectID at key, which
// certainly left nothing at the target, so that the key can be attempted
// afresh. A Done key, or another attempt's row, is kept.
func (k *Keys) Abandon(ctx context.Context, key, effectID string) error {
	if _, err := k.q.ExecContext(ctx, `DELETE FROM ambit_effect_keys WHERE idempotency_key = ? AND effect_id = ? AND state = 'started'`,
		key, effectID); err != nil {
		return fmt.Errorf("abandon idempotency key %q: %w", key, err)
	}
	return nil
}

// Tx runs fn in one transaction, committed when fn returns nil.
func (k *Keys) Tx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	tx, err := k.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// MarkRecorded notes, in one statement, that the kernel has logged the
// keys' receipts.
func (k *Keys) MarkRecorded(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	args := make([]any, len(keys))
	for i, key := range keys {
		args[i] = key
	}
	query := `UPDATE ambit_effect_keys SET recorded = 1 WHERE idempotency_key IN (` + sqldb.Placeholders(len(keys)) + `)`
	if _, err := k.db.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("mark %d idempotency keys recorded (first %q): %w", len(keys), keys[0], err)
	}
	return nil
}

// Unrecorded returns up to limit Done keys whose receipts the kernel has
// not logged yet, oldest first.
func (k *Keys) Unrecorded(ctx context.Context, limit int) ([]Entry, error) {
	rows, err := k.db.QueryContext(ctx, selectEntry+` WHERE state = 'done' AND recorded = 0
		ORDER BY started_at, idempotency_key LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("unrecorded effects: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("unrecorded effects: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unrecorded effects: %w", err)
	}
	return out, nil
}

const selectEntry = `SELECT idempotency_key, capability_id, task_id, tool, call_hash, effect_id, state,
	started_at, receipt, recorded FROM ambit_effect_keys`

type scanner interface{ Scan(dest ...any) error }

func scanEntry(s scanner) (Entry, error) {
	var (
		e                Entry
		state, startedAt string
		receipt          []byte
		recorded         int64
	)
	if err := s.Scan(&e.Key, &e.CapabilityID, &e.TaskID, &e.Tool, &e.CallHash, &e.EffectID, &state,
		&startedAt, &receipt, &recorded); err != nil {
		return Entry{}, err
	}
	switch state {
	case "started":
		e.State = Started
	case "done":
		e.State = Done
	default:
		return Entry{}, fmt.Errorf("idempotency key %q: unknown state %q", e.Key, state)
	}
	t, err := time.Parse(time.RFC3339Nano, startedAt)
	if err != nil {
		return Entry{}, fmt.Errorf("idempotency key %q: started_at: %w", e.Key, err)
	}
	e.StartedAt = t
	if e.State == Done {
		e.Receipt = &receiptv1.Envelope{}
		if err := proto.Unmarshal(receipt, e.Receipt); err != nil {
			return Entry{}, fmt.Errorf("idempotency key %q: receipt: %w", e.Key, err)
		}
	}
	e.Recorded = recorded != 0
	return e, nil
}
