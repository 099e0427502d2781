package claims

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// busyTimeoutMillis bounds how long a statement waits for another
// connection's lock (the demo edits claims while the adapter reads them).
const busyTimeoutMillis = 5000

// fileURI turns a path into an SQLite URI path; characters that would end
// the path ("?", "#", "%") are escaped.
func fileURI(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath()
}

// Open opens the database at path read-write, creating the file if needed.
// WAL mode lets the read-only evidence adapter read while an edit commits.
func Open(path string) (*sql.DB, error) {
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate",
		fileURI(path), busyTimeoutMillis)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open claims database %s: %w", path, err)
	}
	return db, nil
}

// OpenReadOnly opens the existing database at path read-only: the file is
// opened with mode=ro and every connection is query_only, so the evidence
// adapter cannot change its sources even through a bug.
func OpenReadOnly(path string) (*sql.DB, error) {
	dsn := fmt.Sprintf("%s?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)", fileURI(path), busyTimeoutMillis)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open claims database %s read-only: %w", path, err)
	}
	return db, nil
}

const schema = `
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
);`

// Migrate creates the claims and receipts tables if they do not exist.
func Migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("migrate claims database: %w", err)
	}
	return nil
}

// Seed inserts data in one transaction. Rows whose key already exists are
// left as they are, so seeding twice is harmless and never undoes an edit.
func Seed(ctx context.Context, db *sql.DB, data Data) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("seed claims database: %w", err)
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
		return fmt.Errorf("seed claims database: %w", err)
	}
	return nil
}

// EditClaim sets a claim's receipt_total and increments its row_version, as
// an HR correction would: the claim's state version moves from, say,
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
