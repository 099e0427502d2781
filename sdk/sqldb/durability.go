package sqldb

import "fmt"

// Durability selects how a commit reaches the disk. Every process that
// commits (the kernel's store, the action adapter's key table) takes the
// same two levels, so one word means one guarantee across a deployment.
type Durability string

// Durability levels. Full waits for the disk at every commit (SQLite
// fsyncs; PostgreSQL waits for its WAL flush) and survives power loss.
// Normal survives a crash of the process (and, on PostgreSQL, of the
// client) but may lose the last commits when the machine or the database
// server loses power.
const (
	DurabilityFull   Durability = "full"
	DurabilityNormal Durability = "normal"
)

// Check refuses a level other than full and normal.
func (d Durability) Check() error {
	if d != DurabilityFull && d != DurabilityNormal {
		return fmt.Errorf("durability must be full or normal, got %q", string(d))
	}
	return nil
}

// sqliteSync is SQLite's synchronous pragma for d: in WAL mode NORMAL
// writes every commit to the log before it returns and fsyncs only at
// checkpoints.
func (d Durability) sqliteSync() string {
	if d == DurabilityNormal {
		return "NORMAL"
	}
	return "FULL"
}

// SQLitePragma is the synchronous pragma a connection string sets for d.
func (d Durability) SQLitePragma() string { return "synchronous(" + d.sqliteSync() + ")" }

// PostgresParams are the session parameters a PostgreSQL connection sets
// for d: at normal a commit does not wait for the server's WAL flush.
func (d Durability) PostgresParams() map[string]string {
	commit := "on"
	if d == DurabilityNormal {
		commit = "off"
	}
	return map[string]string{"synchronous_commit": commit}
}
