package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// ErrNotFound marks a missing row.
var ErrNotFound = errors.New("not found")

// Durability selects how a commit reaches the disk.
type Durability string

// Durability levels. Full fsyncs every commit (survives power loss);
// normal survives a process crash but may lose the last commits on power
// loss.
const (
	DurabilityFull   Durability = "full"
	DurabilityNormal Durability = "normal"
)

var schema = []string{
	journal.Schema,
	`CREATE TABLE IF NOT EXISTS tasks (
		task_id          TEXT PRIMARY KEY,
		contract_item_id TEXT NOT NULL,
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
		payload_hash  TEXT NOT NULL,
		source        TEXT NOT NULL,
		record_key    TEXT NOT NULL,
		state_version TEXT NOT NULL,
		read_at       TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS capabilities (
		capability_id       TEXT PRIMARY KEY,
		decision_id         TEXT NOT NULL,
		task_id             TEXT NOT NULL,
		record              TEXT NOT NULL,
		state_version       TEXT NOT NULL,
		idempotency_key     TEXT NOT NULL UNIQUE,
		action_type         TEXT NOT NULL,
		currency            TEXT NOT NULL,
		amount_minor        INTEGER NOT NULL,
		status              INTEGER NOT NULL,
		effect_receipt_id   TEXT NOT NULL DEFAULT '',
		readback_receipt_id TEXT NOT NULL DEFAULT '',
		note                TEXT NOT NULL DEFAULT '',
		issued_at           TEXT NOT NULL,
		expires_at          TEXT NOT NULL,
		approval_id         TEXT NOT NULL DEFAULT '',
		effect_hash         TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS capabilities_task ON capabilities (task_id)`,
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
	db *sql.DB
}

// Open opens (creating if needed) the SQLite database at path.
func Open(ctx context.Context, path string, d Durability) (*Store, error) {
	sync := "FULL"
	if d == DurabilityNormal {
		sync = "NORMAL"
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// SQLite has one writer; a single connection serialises transactions in
	// process instead of spinning on SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: migrate: %w", path, err)
		}
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Update runs fn in one write transaction and commits it when fn returns
// nil.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &Tx{tx: sqlTx, ctx: ctx}
	if err := fn(tx); err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// View runs fn in a transaction that is always rolled back.
func (s *Store) View(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = sqlTx.Rollback() }()
	return fn(&Tx{tx: sqlTx, ctx: ctx})
}

// Entries reads the journal after position after (limit <= 0: all).
func (s *Store) Entries(ctx context.Context, after int64, limit int) ([]journal.Entry, error) {
	return journal.Read(ctx, s.db, after, limit)
}

// The store is the embedded journal.Log.
var (
	_ journal.Reader   = (*Store)(nil)
	_ journal.Appender = (*Tx)(nil)
)

// Tx is one transaction.
type Tx struct {
	tx  *sql.Tx
	ctx context.Context
}

// Append adds a journal entry that commits with the transaction.
func (t *Tx) Append(at time.Time, kind, ref string, body []byte) (journal.Entry, error) {
	return journal.Append(t.ctx, t.tx, at, kind, ref, body)
}

// Head is the journal's head hash.
func (t *Tx) Head() (string, error) { return journal.Head(t.ctx, t.tx) }

// tsLayout has a fixed width, so stored times compare correctly as text.
const tsLayout = "2006-01-02T15:04:05.000000000Z"

func ts(t time.Time) string { return t.UTC().Format(tsLayout) }

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
