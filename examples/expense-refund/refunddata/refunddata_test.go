package refunddata_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/examples/expense-refund/refunddata"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/google/go-cmp/cmp"
)

// created makes the example's databases in a fresh folder and opens them.
func created(t *testing.T) (claims, payments *sql.DB) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	if err := refunddata.Create(ctx, dir); err != nil {
		t.Fatal(err)
	}
	open := func(name string) *sql.DB {
		db, err := sqldb.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	return open(refunddata.ClaimsFile), open(refunddata.PaymentsFile)
}

func TestDemoRows(t *testing.T) {
	claims, _ := created(t)
	type row struct {
		Claim, Claimant, Total string
		Version                int64
	}
	rows, err := claims.Query(`SELECT claim_id, claimant_id, receipt_total, row_version FROM claims ORDER BY claim_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Claim, &r.Claimant, &r.Total, &r.Version); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []row{
		{"C-1001", "employee-7", "17.40", 42},
		{"C-1002", "employee-7", "38.25", 42},
		{"C-1003", "employee-7", "74.00", 42},
		{"C-1004", "employee-7", "62.00", 42},
		{"C-9001", "employee-9", "55.10", 42},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	var claim, text string
	if err := claims.QueryRow(`SELECT claim_id, receipt_text FROM receipts WHERE receipt_id = 'R-2002'`).Scan(&claim, &text); err != nil {
		t.Fatal(err)
	}
	if claim != refunddata.DemoClaim1002 || text != refunddata.DemoInjection || !strings.Contains(text, "IGNORE ALL PREVIOUS RULES") {
		t.Errorf("R-2002 = %q, %q; want the injected receipt of C-1002", claim, text)
	}
}

func TestSeedNeverUndoesAnEdit(t *testing.T) {
	claims, _ := created(t)
	ctx := context.Background()
	if err := refunddata.EditClaim(ctx, claims, refunddata.DemoClaim1001, "18.00"); err != nil {
		t.Fatal(err)
	}
	if err := refunddata.Seed(ctx, claims, refunddata.DemoData()); err != nil {
		t.Fatal(err)
	}
	var total string
	var version int64
	if err := claims.QueryRow(`SELECT receipt_total, row_version FROM claims WHERE claim_id = 'C-1001'`).Scan(&total, &version); err != nil {
		t.Fatal(err)
	}
	if total != "18.00" || version != refunddata.DemoRowVersion+1 {
		t.Errorf("C-1001 after edit and re-seed = %s at %d, want 18.00 at 43", total, version)
	}
	if err := refunddata.EditClaim(ctx, claims, "C-0000", "1.00"); !errors.Is(err, refunddata.ErrNotFound) {
		t.Errorf("EditClaim(missing) = %v, want ErrNotFound", err)
	}
}

func TestOnePaymentPerKey(t *testing.T) {
	_, payments := created(t)
	insert := func(id, key string, amount int64) error {
		_, err := payments.Exec(`INSERT INTO payments (payment_id, idempotency_key, capability_id, task_id, claim_id,
			payee_id, destination, currency, amount_minor, reason_code) VALUES (?, ?, 'cap-1', 'task-1', 'C-1001',
			'employee-7', 'claimant', 'GBP', ?, 'TRAVEL')`, id, key, amount)
		return err
	}
	if err := insert("pay-1", "key-1", 1740); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id, key string
		amount        int64
	}{
		{"same key, another payment", "pay-2", "key-1", 1740},
		{"same payment id", "pay-1", "key-2", 1740},
		{"amount not positive", "pay-3", "key-3", 0},
	}
	for _, tt := range tests {
		if err := insert(tt.id, tt.key, tt.amount); err == nil {
			t.Errorf("%s: inserted", tt.name)
		}
	}
	var n int
	if err := payments.QueryRow(`SELECT count(*) FROM payments`).Scan(&n); err != nil || n != 1 {
		t.Errorf("payments = %d, %v; want 1", n, err)
	}
	var at string
	if err := payments.QueryRow(`SELECT executed_at FROM payments`).Scan(&at); err != nil || !strings.HasSuffix(at, "Z") {
		t.Errorf("executed_at = %q, %v; want a UTC time", at, err)
	}
}
