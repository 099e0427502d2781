package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"google.golang.org/protobuf/proto"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
)

// Errors of the ledger, matched with errors.Is.
var (
	// ErrNotFound means no payment has the key or id.
	ErrNotFound = errors.New("payment not found")
	// ErrDuplicate means a payment with the same idempotency key or payment
	// id already exists; nothing was written.
	ErrDuplicate = errors.New("payment already exists")
)

// Payment is one row of the ledger.
type Payment struct {
	PaymentID      string
	IdempotencyKey string
	CapabilityID   string
	TaskID         string
	ClaimID        string
	PayeeID        string
	// Destination is the destination class bound by the capability.
	Destination string
	Currency    string
	AmountMinor int64
	ExecutedAt  time.Time
	// Action is the executed action.
	Action *contractv1.Action
	// Receipt is the signed effect receipt.
	Receipt *receiptv1.Envelope
	// Recorded is true once the kernel has logged Receipt.
	Recorded bool
}

// Ledger is the payments ledger. It is safe for concurrent use.
type Ledger struct {
	db *sql.DB
}

const busyTimeoutMillis = 5000

const schema = `
CREATE TABLE IF NOT EXISTS payments (
	payment_id      TEXT PRIMARY KEY,
	idempotency_key TEXT NOT NULL UNIQUE,
	capability_id   TEXT NOT NULL,
	task_id         TEXT NOT NULL,
	claim_id        TEXT NOT NULL,
	payee_id        TEXT NOT NULL,
	destination     TEXT NOT NULL,
	currency        TEXT NOT NULL,
	amount_minor    INTEGER NOT NULL,
	executed_at     TEXT NOT NULL,
	action          BLOB NOT NULL,
	receipt         BLOB NOT NULL,
	recorded        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS payments_claim ON payments (claim_id);
CREATE INDEX IF NOT EXISTS payments_unrecorded ON payments (recorded) WHERE recorded = 0;`

// Open opens (creating if needed) the ledger at path and creates its table.
// WAL lets the verifier read while a payment commits; synchronous FULL
// makes a committed payment survive a power cut, not only a crash; write
// transactions start IMMEDIATE so two writers queue on busy_timeout instead
// of failing to upgrade a read lock.
func Open(ctx context.Context, path string) (*Ledger, error) {
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate",
		(&url.URL{Path: path}).EscapedPath(), busyTimeoutMillis)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open payments ledger %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open payments ledger %s: %w", path, err)
	}
	return &Ledger{db: db}, nil
}

// Close closes the ledger.
func (l *Ledger) Close() error { return l.db.Close() }

// Insert commits p in one transaction. When a payment with the same
// idempotency key (or payment id) exists, nothing is written and the error
// is [ErrDuplicate]: the UNIQUE constraint, not a prior lookup, is what
// guarantees one payment per key.
func (l *Ledger) Insert(ctx context.Context, p Payment) (err error) {
	action, err := proto.MarshalOptions{Deterministic: true}.Marshal(p.Action)
	if err != nil {
		return fmt.Errorf("insert payment %s: action: %w", p.PaymentID, err)
	}
	receipt, err := proto.MarshalOptions{Deterministic: true}.Marshal(p.Receipt)
	if err != nil {
		return fmt.Errorf("insert payment %s: receipt: %w", p.PaymentID, err)
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("insert payment %s: %w", p.PaymentID, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	_, err = tx.ExecContext(ctx, `INSERT INTO payments (payment_id, idempotency_key, capability_id, task_id,
		claim_id, payee_id, destination, currency, amount_minor, executed_at, action, receipt, recorded)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.PaymentID, p.IdempotencyKey, p.CapabilityID, p.TaskID, p.ClaimID, p.PayeeID, p.Destination,
		p.Currency, p.AmountMinor, p.ExecutedAt.UTC().Format(time.RFC3339Nano), action, receipt, boolInt(p.Recorded))
	if isUniqueViolation(err) {
		return fmt.Errorf("insert payment %s: %w: idempotency key %q", p.PaymentID, ErrDuplicate, p.IdempotencyKey)
	}
	if err != nil {
		return fmt.Errorf("insert payment %s: %w", p.PaymentID, err)
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("insert payment %s: commit: %w", p.PaymentID, err)
	}
	return nil
}

// ByKey returns the payment with the idempotency key, or [ErrNotFound].
func (l *Ledger) ByKey(ctx context.Context, key string) (Payment, error) {
	row := l.db.QueryRowContext(ctx, selectPayment+` WHERE idempotency_key = ?`, key)
	p, err := scanPayment(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Payment{}, fmt.Errorf("idempotency key %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("payment by idempotency key %q: %w", key, err)
	}
	return p, nil
}

// MarkRecorded notes that the kernel has logged the payment's receipt.
func (l *Ledger) MarkRecorded(ctx context.Context, paymentID string) error {
	res, err := l.db.ExecContext(ctx, `UPDATE payments SET recorded = 1 WHERE payment_id = ?`, paymentID)
	if err != nil {
		return fmt.Errorf("mark payment %s recorded: %w", paymentID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("mark payment %s recorded: %w", paymentID, err)
	}
	if n == 0 {
		return fmt.Errorf("mark payment %s recorded: %w", paymentID, ErrNotFound)
	}
	return nil
}

// Unrecorded returns up to limit payments whose receipts the kernel has not
// logged yet, oldest first.
func (l *Ledger) Unrecorded(ctx context.Context, limit int) ([]Payment, error) {
	rows, err := l.db.QueryContext(ctx, selectPayment+` WHERE recorded = 0 ORDER BY executed_at, payment_id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("unrecorded payments: %w", err)
	}
	defer rows.Close()
	var out []Payment
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			return nil, fmt.Errorf("unrecorded payments: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unrecorded payments: %w", err)
	}
	return out, nil
}

const selectPayment = `SELECT payment_id, idempotency_key, capability_id, task_id, claim_id, payee_id,
	destination, currency, amount_minor, executed_at, action, receipt, recorded FROM payments`

type scanner interface{ Scan(dest ...any) error }

func scanPayment(s scanner) (Payment, error) {
	var (
		p               Payment
		executedAt      string
		action, receipt []byte
		recorded        int64
	)
	if err := s.Scan(&p.PaymentID, &p.IdempotencyKey, &p.CapabilityID, &p.TaskID, &p.ClaimID, &p.PayeeID,
		&p.Destination, &p.Currency, &p.AmountMinor, &executedAt, &action, &receipt, &recorded); err != nil {
		return Payment{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, executedAt)
	if err != nil {
		return Payment{}, fmt.Errorf("payment %s: executed_at: %w", p.PaymentID, err)
	}
	p.ExecutedAt = t
	p.Action = &contractv1.Action{}
	if err := proto.Unmarshal(action, p.Action); err != nil {
		return Payment{}, fmt.Errorf("payment %s: action: %w", p.PaymentID, err)
	}
	p.Receipt = &receiptv1.Envelope{}
	if err := proto.Unmarshal(receipt, p.Receipt); err != nil {
		return Payment{}, fmt.Errorf("payment %s: receipt: %w", p.PaymentID, err)
	}
	p.Recorded = recorded != 0
	return p, nil
}

func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
