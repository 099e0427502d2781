package payments_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/ambitkernel/ambit/verifier/payments"
	"github.com/ambitkernel/ambit/verifier/readback"
)

// ledgerSchema is the action adapter's payments table, written here
// independently: the verifier depends on the table, not on the writer's
// code.
const ledgerSchema = `CREATE TABLE payments (
	payment_id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, capability_id TEXT NOT NULL,
	task_id TEXT NOT NULL, claim_id TEXT NOT NULL, payee_id TEXT NOT NULL, destination TEXT NOT NULL,
	currency TEXT NOT NULL, amount_minor INTEGER NOT NULL, executed_at TEXT NOT NULL,
	action BLOB NOT NULL, receipt BLOB NOT NULL, recorded INTEGER NOT NULL DEFAULT 0)`

func writeLedger(t *testing.T, rows ...readback.Row) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payments.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ledgerSchema); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO payments VALUES (?, ?, ?, 'task', ?, ?, ?, ?, ?, '2026-03-02T10:00:00Z', x'', x'', 1)`,
			r.PaymentID, r.IdempotencyKey, r.CapabilityID, r.ClaimID, r.PayeeID, r.Destination, r.Currency, r.AmountMinor); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestRead(t *testing.T) {
	a := readback.Row{PaymentID: "pay-a", IdempotencyKey: "idem-1", CapabilityID: "cap-1", ClaimID: "C-1001",
		PayeeID: "employee-7", Destination: "claimant", Currency: "GBP", AmountMinor: 1740}
	b := a
	b.PaymentID, b.IdempotencyKey, b.CapabilityID = "pay-b", "idem-2", "cap-2"
	c := a
	c.PaymentID, c.IdempotencyKey, c.ClaimID = "pay-c", "idem-3", "C-1003"
	r, err := payments.Open(writeLedger(t, a, b, c))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	forKey, forClaim, err := r.Read(ctx, "idem-1", "C-1001")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]readback.Row{a}, forKey); diff != "" {
		t.Errorf("rows for key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]readback.Row{a, b}, forClaim); diff != "" {
		t.Errorf("rows for claim (-want +got):\n%s", diff)
	}
	forKey, forClaim, err = r.Read(ctx, "idem-9", "C-9999")
	if err != nil || len(forKey) != 0 || len(forClaim) != 0 {
		t.Errorf("Read(unknown) = %v, %v, %v; want nothing", forKey, forClaim, err)
	}
}

func TestReadOnly(t *testing.T) {
	path := writeLedger(t)
	db, err := sql.Open("sqlite", payments.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM payments`); err == nil {
		t.Error("a write through the verifier's DSN succeeded")
	}
}

func TestReadMissingLedger(t *testing.T) {
	r, err := payments.Open(filepath.Join(t.TempDir(), "missing.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := r.Read(context.Background(), "idem-1", "C-1001"); err == nil {
		t.Error("Read of a missing ledger succeeded")
	}
}
