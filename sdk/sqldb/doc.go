// Package sqldb opens the SQL databases that declared connectors read and
// write — sources, executors, readbacks and the adapters' own state — from
// one connection string, so that every process opens a database the same
// way: [Open] read-write, [OpenReadOnly] for a path that must never write.
// SQLite (a file path, or "sqlite:PATH") is the embedded default.
//
// [Ident] quotes a configured table or column name; names always come from
// configuration checked at load, never from a request.
package sqldb
