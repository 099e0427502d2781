// Package store is the kernel's grant store: tasks, observed record
// versions, recorded evidence, capabilities and their commitments, and
// approvals, beside the tamper-evident journal, in one SQLite database or
// in a PostgreSQL database that kernel replicas share.
//
// Every change happens inside [Store.Update], whose [Tx] also appends the
// journal entry for it, so a change and its log entry commit together or
// not at all; concurrent updates share one commit (group commit). The
// agent-facing API never reaches this package.
//
// An exclusive store (SQLite: no other process writes it) also follows its
// commits in memory: the journal's head, version stamps of task bindings
// and record versions, and the bindings, versions and evidence rows read.
// It keeps each task's usage in memory alone, counted from the task's
// capabilities the first time it is asked for after a start.
// [Store.Read] reads through that memory on connections of its own, so
// that decisions are made outside the writer and checked in it. Its
// write-ahead log is copied into the database file in the background
// (SQLite's checkpoints, not the journal's signed ones), so that no commit
// waits for the copy; and its new capabilities wait in a table without
// indexes until a later commit moves them (pending.go), so that a
// decision's commit writes fewer pages.
//
// At durability normal an SQLite store also keeps a log file beside its
// database (its path and "-log"; logged.go). A batch of updates that ran
// no statement of their own, as decisions' do, is acknowledged once it is
// appended there, and a copier copies it into SQLite after, with the
// batches acknowledged meanwhile and those that follow within a short
// wait; a reader of SQLite first waits for those copies (and cuts the
// wait short), an update that runs a statement waits for the copier to
// catch up, and a start copies what the log holds past SQLite's journal.
// The log is part of the database, as SQLite's own write-ahead log is.
package store
