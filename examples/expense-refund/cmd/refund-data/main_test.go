package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/ambitkernel/ambit/examples/expense-refund/refunddata"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// TestMakesTheDatabases runs the command twice on a new folder: the
// claims are seeded once and the payments table is empty.
func TestMakesTheDatabases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for range 2 {
		if err := run(context.Background(), []string{"--dir", dir}, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	count := func(file, table string) int {
		db, err := sqldb.OpenReadOnly(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM ` + sqldb.Ident(table)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got, want := count(refunddata.ClaimsFile, "claims"), len(refunddata.DemoData().Claims); got != want {
		t.Errorf("%d claims, want %d", got, want)
	}
	if got := count(refunddata.PaymentsFile, "payments"); got != 0 {
		t.Errorf("%d payments, want none", got)
	}
	for _, args := range [][]string{{}, {"--dir", dir, "extra"}} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run %q succeeded", args)
		}
	}
}
