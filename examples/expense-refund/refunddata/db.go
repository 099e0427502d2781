package refunddata

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// The files [Create] makes in a data folder; the example's evidence,
// action and verifier declarations name them as ${DATA}/claims.db and
// ${DATA}/payments.db.
const (
	ClaimsFile   = "claims.db"
	PaymentsFile = "payments.db"
)

// ErrNotFound means no row has the key.
var ErrNotFound = errors.New("not found")

const claimsSchema = `
CREATE TABLE IF NOT EXISTS claims (
	claim_id           TEXT PRIMARY KEY,
	claimant_id        TEXT NOT NULL,
	receipt_total      TEXT NOT NULL,
	receipt_date       TEXT NOT NULL,
	cost_centre        TEXT NOT NULL,
	salary             TEXT NOT NULL,
	medical_notes      TEXT NOT NULL,
	bank_account       TEXT NOT NULL,
	disciplinary_notes TEXT NOT NULL,
	row_version        INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS receipts (
	receipt_id    TEXT PRIMARY KEY,
	claim_id      TEXT NOT NULL,
	claimant_id   TEXT NOT NULL,
	receipt_total TEXT NOT NULL,
	receipt_date  TEXT NOT NULL,
	receipt_text  TEXT NOT NULL,
	row_version   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_claim ON receipts (claim_id);`

// The payments table holds only what the declared executor writes (its
// key column and mapped columns) plus the time of the write. The UNIQUE
// idempotency key, not a lookup before the insert, is what makes a refund
// happen at most once per key, even when two retries race.
const paymentsSchema = `
CREATE TABLE IF NOT EXISTS payments (
	payment_id      TEXT PRIMARY KEY,
	idempotency_key TEXT NOT NULL UNIQUE,
	capability_id   TEXT NOT NULL,
	task_id         TEXT NOT NULL,
	claim_id        TEXT NOT NULL,
	payee_id        TEXT NOT NULL,
	destination     TEXT NOT NULL,
	currency        TEXT NOT NULL CHECK (length(currency) = 3),
	amount_minor    INTEGER NOT NULL CHECK (amount_minor > 0),
	reason_code     TEXT NOT NULL,
	executed_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS payments_claim ON payments (claim_id);`

// Migrate creates the claims and receipts tables if they do not exist.
func Migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, claimsSchema); err != nil {
		return fmt.Errorf("create claims tables: %w", err)
	}
	return nil
}

// MigratePayments creates the payments table if it does not exist.
func MigratePayments(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, paymentsSchema); err != nil {
		return fmt.Errorf("create payments table: %w", err)
	}
	return nil
}

// Seed inserts data in one transaction. Rows whose key already exists are
// left as they are, so seeding twice is harmless and never undoes an edit.
func Seed(ctx context.Context, db *sql.DB, data Data) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("seed claims: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	for _, c := range data.Claims {
		_, err = tx.ExecContext(ctx, `INSERT INTO claims (claim_id, claimant_id, receipt_total, receipt_date,
			cost_centre, salary, medical_notes, bank_account, disciplinary_notes, row_version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (claim_id) DO NOTHING`,
			c.ClaimID, c.ClaimantID, c.ReceiptTotal, c.ReceiptDate, c.CostCentre, c.Salary,
			c.MedicalNotes, c.BankAccount, c.DisciplinaryNotes, c.RowVersion)
		if err != nil {
			return fmt.Errorf("seed claim %s: %w", c.ClaimID, err)
		}
	}
	for _, r := range data.Receipts {
		_, err = tx.ExecContext(ctx, `INSERT INTO receipts (receipt_id, claim_id, claimant_id, receipt_total,
			receipt_date, receipt_text, row_version)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (receipt_id) DO NOTHING`,
			r.ReceiptID, r.ClaimID, r.ClaimantID, r.ReceiptTotal, r.ReceiptDate, r.ReceiptText, r.RowVersion)
		if err != nil {
			return fmt.Errorf("seed receipt %s: %w", r.ReceiptID, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("seed claims: %w", err)
	}
	return nil
}

// EditClaim sets a claim's receipt_total and increments its row_version,
// as an HR correction would: the claim's state version moves from, say,
// "claims-v42" to "claims-v43". A missing claim is [ErrNotFound].
func EditClaim(ctx context.Context, db *sql.DB, claimID, newTotal string) error {
	res, err := db.ExecContext(ctx,
		`UPDATE claims SET receipt_total = ?, row_version = row_version + 1 WHERE claim_id = ?`,
		newTotal, claimID)
	if err != nil {
		return fmt.Errorf("edit claim %q: %w", claimID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("edit claim %q: %w", claimID, err)
	}
	if n == 0 {
		return fmt.Errorf("edit claim %q: %w", claimID, ErrNotFound)
	}
	return nil
}

// Create makes the example's databases in dir: ClaimsFile with the claims
// and receipts tables seeded with [DemoData], and PaymentsFile with an
// empty payments table. Running it again changes nothing that exists.
func Create(ctx context.Context, dir string) error {
	claims, err := sqldb.Open(filepath.Join(dir, ClaimsFile))
	if err != nil {
		return err
	}
	defer claims.Close()
	if err := Migrate(ctx, claims); err != nil {
		return err
	}
	if err := Seed(ctx, claims, DemoData()); err != nil {
		return err
	}
	payments, err := sqldb.Open(filepath.Join(dir, PaymentsFile))
	if err != nil {
		return err
	}
	defer payments.Close()
	return MigratePayments(ctx, payments)
}
