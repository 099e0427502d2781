package payments

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"

	"github.com/ambitkernel/ambit/verifier/readback"
)

const busyTimeoutMillis = 5000

// Reader reads the payments ledger. It is safe for concurrent use.
type Reader struct {
	db *sql.DB
}

// DSN is the read-only data source name of the ledger at path.
func DSN(path string) string {
	return fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)",
		(&url.URL{Path: path}).EscapedPath(), busyTimeoutMillis)
}

// Open prepares a read-only handle on the ledger at path. It does not touch
// the file: the action adapter creates the ledger, possibly after the
// verifier has started, and a missing ledger is an error of each read.
func Open(path string) (*Reader, error) {
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("open payments ledger %s read-only: %w", path, err)
	}
	return &Reader{db: db}, nil
}

// Close closes the handle.
func (r *Reader) Close() error { return r.db.Close() }

// Read returns the payments with idempotency key and the payments for
// claimID, both from one read transaction so they are consistent with
// each other.
func (r *Reader) Read(ctx context.Context, key, claimID string) (forKey, forClaim []readback.Row, err error) {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("read payments ledger: %w", err)
	}
	// Read-only: rolling back ends the snapshot and changes nothing.
	defer func() { _ = tx.Rollback() }()
	if forKey, err = query(ctx, tx, "idempotency_key", key); err != nil {
		return nil, nil, err
	}
	if forClaim, err = query(ctx, tx, "claim_id", claimID); err != nil {
		return nil, nil, err
	}
	return forKey, forClaim, nil
}

// query selects the rows whose column (one of two fixed names) equals v.
func query(ctx context.Context, tx *sql.Tx, column, v string) ([]readback.Row, error) {
	var q string
	switch column {
	case "idempotency_key":
		q = selectRows + ` WHERE idempotency_key = ? ORDER BY payment_id`
	case "claim_id":
		q = selectRows + ` WHERE claim_id = ? ORDER BY payment_id`
	default:
		return nil, fmt.Errorf("read payments ledger: no query by %q", column)
	}
	rows, err := tx.QueryContext(ctx, q, v)
	if err != nil {
		return nil, fmt.Errorf("read payments by %s: %w", column, err)
	}
	defer rows.Close()
	var out []readback.Row
	for rows.Next() {
		var p readback.Row
		if err := rows.Scan(&p.PaymentID, &p.IdempotencyKey, &p.CapabilityID, &p.ClaimID, &p.PayeeID,
			&p.Destination, &p.Currency, &p.AmountMinor); err != nil {
			return nil, fmt.Errorf("read payments by %s: %w", column, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read payments by %s: %w", column, err)
	}
	return out, nil
}

const selectRows = `SELECT payment_id, idempotency_key, capability_id, claim_id, payee_id, destination,
	currency, amount_minor FROM payments`
