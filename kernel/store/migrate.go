package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
)

// A migration brings the schema from version-1 to version. Both databases
// run the same list, recorded in the same schema_version table; the only
// difference is in column types (postgresTypes).
type migration struct {
	version int
	stmts   []string
}

// migrations, oldest first. Never edit one that has shipped: add the next.
var migrations = []migration{
	// The first version is the schema as it was before versions were
	// recorded; its statements are idempotent, so a database made then
	// takes it as it is.
	{version: 1, stmts: append(append([]string{}, journal.Schema...), schema...)},
	// Snapshots of the authority ledger (snapshot.go).
	{version: 2, stmts: snapshotSchema},
}

// schemaVersion is the schema version this kernel writes.
func schemaVersion() int { return migrations[len(migrations)-1].version }

// migrateLock is the advisory lock that serialises replicas migrating one
// PostgreSQL database at start-up.
const migrateLock = 0x616d6269_74000001

// postgresTypes maps SQLite's column types onto PostgreSQL's: 64-bit
// integers (SQLite's INTEGER is 64-bit already) and byte strings.
var postgresTypes = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bINTEGER\b`), "BIGINT"},
	{regexp.MustCompile(`\bBLOB\b`), "BYTEA"},
}

func forPostgres(stmt string) string {
	for _, t := range postgresTypes {
		stmt = t.re.ReplaceAllString(stmt, t.with)
	}
	return stmt
}

// migrate applies the migrations db has not recorded, in one transaction,
// and refuses a database written by a newer kernel.
func migrate(ctx context.Context, db *sql.DB, pg bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if pg {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(migrateLock)); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if have > schemaVersion() {
		return fmt.Errorf("migrate: the database's schema is version %d, newer than this kernel's %d: run a kernel at least as new", have, schemaVersion())
	}
	for _, m := range migrations {
		if m.version <= have {
			continue
		}
		for _, stmt := range m.stmts {
			if pg {
				stmt = forPostgres(stmt)
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to version %d: %w", m.version, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied_at) VALUES (?, ?)`,
			m.version, ts(time.Now())); err != nil {
			return fmt.Errorf("migrate to version %d: %w", m.version, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
