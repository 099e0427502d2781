package sqldb

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// PostgreSQL's SQLSTATE classes and codes the writers tell apart.
const (
	pgUniqueViolation = "23505"
	// pgIntegrity is the class of every constraint violation (NOT NULL,
	// CHECK, FOREIGN KEY, UNIQUE, EXCLUSION).
	pgIntegrity = "23"
	// pgData is the class of values the column cannot take (a text
	// that is not an integer, a number out of range, text too long).
	pgData = "22"
)

// IsUniqueViolation reports whether err is the database refusing a row
// whose unique or primary key is taken.
func IsUniqueViolation(err error) bool {
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pe.Code == pgUniqueViolation
	}
	if se, ok := errors.AsType[*sqlite.Error](err); ok {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		}
	}
	return false
}

// IsRefused reports whether err is the database refusing a row for what
// it holds: a constraint (NOT NULL, CHECK, FOREIGN KEY, a unique key) or,
// on PostgreSQL, a value its column cannot take. Such a statement wrote
// nothing, and would write nothing if repeated.
func IsRefused(err error) bool {
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		class := pe.Code[:min(2, len(pe.Code))]
		return class == pgIntegrity || class == pgData
	}
	se, ok := errors.AsType[*sqlite.Error](err)
	return ok && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}
