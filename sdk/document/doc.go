// Package document reads the YAML and JSON documents Ambit takes as input —
// configuration files, contracts, proposals, fixtures — strictly, in one
// way everywhere.
//
// A duplicate key is an error, at any depth, and so are several documents
// in one file, merge keys ("<<") and keys that are not strings: a second
// `subject: "*"` must never silently replace the first. An unknown key is
// an error too: [Document.Decode] checks every key against the json tags of
// the Go type it fills (exact case, not encoding/json's case-insensitive
// match), and [Document.DecodeProto] against the message's fields. Every
// such error is an [*Error] that names the line and the key path,
// e.g. "line 7: sources.records_db.sql.table: duplicate key (first at line 5)".
//
// JSON is read by the same parser (JSON is YAML), so JSON input gets the
// same checks.
//
// Entry points: [Parse] reads a document; [Document.Set] replaces one
// value (e.g. from an environment variable); [Document.Decode],
// [Document.DecodeProto] and [Document.JSON] turn it into a Go value, a
// proto message or JSON. [Decode] and [DecodeProto] do both steps.
package document
