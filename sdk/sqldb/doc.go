// Package sqldb opens the SQL databases that declared connectors read and
// write — sources, executors, readbacks and the adapters' own state — from
// one connection string, so that every process opens a database the same
// way: [Open] read-write, [OpenReadOnly] for a path that must never write.
// SQLite (a file path, or "sqlite:PATH") is the embedded default; a
// postgres:// URL opens PostgreSQL through pgx, with the same '?'
// placeholders ([Rebind]), so that one SQL text serves both.
//
// [CheckIdent] checks a configured table or column name, [Ident] quotes
// one and [Column] qualifies a column by its table (SQLite reads an
// unknown quoted name alone as a string, never as an error); names always
// come from configuration checked at load, never from a request.
// [TableColumns] and [HasColumn] check a declaration against the table
// when a connector opens it, and [Selects] selects its columns so that
// every value arrives as stored, on either database. [Text] is the text
// form of a value read, as state versions carry it. [IsUniqueViolation]
// and [IsRefused] tell a row the database refused from a write that
// failed, on either database.
package sqldb
