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

// Postgres reports whether tests run on PostgreSQL.
func Postgres() bool { return os.Getenv("AMBIT_TEST_STORE") == "postgres" }

// DSN returns path, or a fresh PostgreSQL database's URL when tests run on
// PostgreSQL.
func DSN(t testing.TB, path string) string {
	t.Helper()
	if Postgres() {
		return pgtest.Database(t)
	}
	return path
}
