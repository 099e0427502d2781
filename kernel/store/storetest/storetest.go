// Package storetest picks the database a test's kernel store opens: an
// SQLite file by default, or a fresh PostgreSQL database when
// AMBIT_TEST_STORE=postgres, so that the store's and the kernel's tests run
// unchanged on both (`make test` runs them both ways).
package storetest

import (
	"os"
	"testing"

	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// DSN returns path, or a fresh PostgreSQL database's URL when tests run on
// PostgreSQL.
func DSN(t testing.TB, path string) string {
	t.Helper()
	if os.Getenv("AMBIT_TEST_STORE") == "postgres" {
		return pgtest.Database(t)
	}
	return path
}
