// Package store is the kernel's grant store: tasks, observed record
// versions, recorded evidence, capabilities and their commitments, and
// approvals, beside the tamper-evident journal, in one SQLite database.
//
// Every change happens inside [Store.Update], whose [Tx] also appends the
// journal entry for it, so a change and its log entry commit together or
// not at all. The agent-facing API never reaches this package.
package store
