package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// A migration brings the schema from version-1 to version. Both databases
// run the same list, recorded in the same schema_version table; they differ
// only in column types (sqldb.PostgresTypes) and in how SQLite stores a table
// (sqlite).
type migration struct {
	version int
	stmts   []string
	// sqlite are statements SQLite alone runs: how its tables are stored;
	// postgres, those PostgreSQL alone runs, where its syntax differs.
	sqlite, postgres []string
}

// migrations, oldest first. Never edit one that has shipped: add the next.
var migrations = []migration{
	// The first version is the schema as it was before versions were
	// recorded; its statements are idempotent, so a database made then
	// takes it as it is.
	{version: 1, stmts: append(append([]string{}, journal.Schema...), schema...)},
	// Snapshots of the authority ledger (snapshot.go).
	{version: 2, stmts: snapshotSchema},
	// Fewer pages written per decision: the journal indexes by kind only
	// the entries replayed by kind, and SQLite keeps capabilities and
	// usage in their primary key's b-tree instead of beside it. Watching
	// records and listing tasks read what they select, not the whole
	// history.
	{version: 3, stmts: append(slices.Clone(journal.KindIndex), lookupIndexes...), sqlite: withoutRowid},
	// Two pages fewer per decision: a task's capabilities, outstanding or
	// not, are found through one index instead of two, and on SQLite a
	// task's usage is kept in memory alone.
	{version: 4, stmts: taskIndex, sqlite: []string{`DROP TABLE IF EXISTS task_usage`}},
	// One page fewer per decision: no index of idempotency keys. The
	// kernel makes a capability's key from its identifier, which the
	// primary key keeps unique, and never looks a capability up by key.
	{version: 5, sqlite: idempotencyUnindexed, postgres: []string{
		`ALTER TABLE capabilities DROP CONSTRAINT IF EXISTS capabilities_idempotency_key_key`,
	}},
	// Approvals are listed a page of one state at a time, without reading
	// every approval ever asked for.
	{version: 6, stmts: []string{approvalsState}},
	// Two pages fewer per decision on SQLite: a new capability waits in a
	// table that no index but its key's keeps, and moves to capabilities
	// later (pending.go); readers see both through one view.
	{version: 7,
		sqlite:   []string{`CREATE TABLE capabilities_pending (` + capabilityTableV5 + `) WITHOUT ROWID`, allCapabilities},
		postgres: []string{`CREATE TABLE capabilities_pending (` + capabilityTableV5 + `)`, allCapabilities}},
	// Pages fewer per commit: the journal finds an entry by the tail of
	// its ref, which for the identifiers Ambit issues begins with the time,
	// so a commit's refs are appended at the index's end together
	// (journal.RefIndex).
	{version: 8, stmts: journal.RefIndex},
	// A watch poll reads each record that outstanding capabilities depend
	// on once, with its latest expiry, instead of every outstanding
	// capability (see dependedStepsQuery): the index of outstanding
	// capabilities by record holds their expiry too.
	{version: 9, stmts: []string{`DROP INDEX IF EXISTS capabilities_record`, capabilitiesRecordExpiry}},
}

// allCapabilities is every capability: moved or pending (pending.go).
var allCapabilities = `CREATE VIEW all_capabilities AS SELECT ` + capabilityColumns + ` FROM capabilities
	UNION ALL SELECT ` + capabilityColumns + ` FROM capabilities_pending`

// approvalsState indexes approvals by state and identifier: a page of
// ListApprovals.
const approvalsState = `CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state, approval_id)`

// capabilityTableV5 is capabilityTable without the uniqueness of
// idempotency keys (schema version 5): the same columns, written once.
var capabilityTableV5 = strings.Replace(capabilityTable,
	"idempotency_key     TEXT NOT NULL UNIQUE,", "idempotency_key     TEXT NOT NULL,", 1)

// idempotencyUnindexed rebuilds SQLite's capabilities without the index
// a UNIQUE column keeps (it cannot be dropped alone), with the indexes of
// version 4.
var idempotencyUnindexed = []string{
	`CREATE TABLE capabilities_v5 (` + capabilityTableV5 + `) WITHOUT ROWID`,
	`INSERT INTO capabilities_v5 (` + capabilityColumns + `) SELECT ` + capabilityColumns + ` FROM capabilities`,
	`DROP TABLE capabilities`,
	`ALTER TABLE capabilities_v5 RENAME TO capabilities`,
	`CREATE INDEX capabilities_task ON capabilities (task_id, status, expires_at, currency, amount_minor)`,
	capabilitiesRecord,
}

// taskIndex replaces the index of capabilities by task and the partial one
// of outstanding capabilities by task and expiry with one index by task,
// status and expiry, which answers both: an issued capability writes one
// index entry for its task instead of two. Which of a task's capabilities
// are outstanding is then read lazily, task by task (see Store.noneDue),
// not at start-up from the whole index. The index holds each capability's
// currency and amount too, so that a task's usage is counted from it
// alone (see txn.countUsage).
var taskIndex = []string{
	`DROP INDEX IF EXISTS capabilities_task`,
	`DROP INDEX IF EXISTS capabilities_outstanding`,
	`CREATE INDEX capabilities_task ON capabilities (task_id, status, expires_at, currency, amount_minor)`,
}

// lookupIndexes serve the records to watch (those seen or read lately and
// those outstanding capabilities or open approvals depend on) and the
// tasks of one contract or agent.
var lookupIndexes = []string{
	`DROP INDEX IF EXISTS capabilities_record`,
	capabilitiesRecord,
	`CREATE INDEX IF NOT EXISTS records_seen ON records (seen_at)`,
	`CREATE INDEX IF NOT EXISTS evidence_read ON evidence (read_at)`,
	`CREATE INDEX IF NOT EXISTS approvals_open ON approvals (record) WHERE ` + isOpenApproval,
	// A superseded contract's tasks, and pages of one agent's or one
	// contract's tasks, without a scan of every task.
	`CREATE INDEX IF NOT EXISTS tasks_item ON tasks (contract_item_id, task_id)`,
	`CREATE INDEX IF NOT EXISTS tasks_agent ON tasks (agent, task_id)`,
}

// capabilitiesRecord indexes outstanding capabilities by the record they
// depend on: what a change of that record revokes.
var capabilitiesRecord = `CREATE INDEX IF NOT EXISTS capabilities_record ON capabilities (record) WHERE ` + isOutstanding

// capabilitiesRecordExpiry is capabilitiesRecord (schema version 9) with
// each capability's expiry after its record: the latest expiry of a
// record's outstanding capabilities is one search.
var capabilitiesRecordExpiry = `CREATE INDEX IF NOT EXISTS capabilities_record ON capabilities (record, expires_at) WHERE ` + isOutstanding

// withoutRowid rebuilds capabilities and task_usage as WITHOUT ROWID
// tables, with the same columns, constraints and indexes.
var withoutRowid = []string{
	`CREATE TABLE capabilities_v3 (` + capabilityTable + `) WITHOUT ROWID`,
	`INSERT INTO capabilities_v3 (` + capabilityColumns + `) SELECT ` + capabilityColumns + ` FROM capabilities`,
	`DROP TABLE capabilities`,
	`ALTER TABLE capabilities_v3 RENAME TO capabilities`,
	`CREATE INDEX capabilities_task ON capabilities (task_id)`,
	`CREATE INDEX capabilities_outstanding ON capabilities (task_id, expires_at) WHERE ` + isOutstanding,
	capabilitiesRecord,
	`CREATE TABLE task_usage_v3 (` + usageTable + `) WITHOUT ROWID`,
	`INSERT INTO task_usage_v3 SELECT task_id, currency, actions, amount_minor FROM task_usage`,
	`DROP TABLE task_usage`,
	`ALTER TABLE task_usage_v3 RENAME TO task_usage`,
}

// schemaVersion is the schema version this kernel writes.
func schemaVersion() int { return migrations[len(migrations)-1].version }

// migrateLock is the advisory lock that serialises replicas migrating one
// PostgreSQL database at start-up.
const migrateLock = 0x616d6269_74000001

// migrate applies the migrations db has not recorded, in one transaction,
// and refuses a database written by a newer kernel.
func migrate(ctx context.Context, db *sql.DB, pg bool) error {
	return migrateTo(ctx, db, pg, schemaVersion())
}

// migrateTo applies the migrations up to version to.
func migrateTo(ctx context.Context, db *sql.DB, pg bool, to int) error {
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
		if m.version <= have || m.version > to {
			continue
		}
		own := m.sqlite
		if pg {
			own = m.postgres
		}
		stmts := slices.Concat(m.stmts, own)
		for _, stmt := range stmts {
			if pg {
				stmt = sqldb.PostgresTypes(stmt)
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
