// Package evidence is the evidence adapter: it serves
// ambit.evidence.v1.EvidenceService/Read over declared sources, releasing
// only the fields a task's contract grants, each read with a signed
// evidence receipt, and it watches the records tasks depend on.
//
// Sources are declared in configuration ([Config], [SourceConfig]), each
// with one [Connector]: [SQLConnector] reads a row of a table (an SQLite
// file or a PostgreSQL database, through sdk/sqldb) and
// [MCPConnector] calls a read-only tool of an upstream MCP server. A
// source declares its key, the column naming the data subject, a CEL
// expression giving the record's state version, and the columns it may
// read: nothing else is selected, computed on or released. Every name is
// checked at load ([Config.Validate]) and against the source itself when
// it is opened ([OpenSources]: the table's columns, the server's answer),
// each problem naming its key path, e.g. "sources.records_db.sql.columns[2]".
//
// A read ([Core.Read]) runs in a fixed order, and fails closed at each step:
//
//  1. The handler checks the request's shape ([ValidateRead]).
//  2. The kernel authorises the read (AdapterService/AuthorizeRead, with
//     the purpose) before anything is read. Its refusals reach the client
//     unchanged, with their ErrorInfo; a kernel that cannot be reached is
//     Unavailable "kernel unreachable: nothing was read".
//  3. Each requested field is planned from the grant: derived (computed
//     by the grant's CEL expression), raw (a declared column) or both
//     with quarantine (released only as text). An unknown field, or a
//     derived field or confinement over a column the source does not
//     declare, is refused before anything is read.
//  4. The connector reads the record: every declared column, its subject
//     and its state version.
//  5. When the grant confines the read (confine_field), the record is
//     released only if that field holds confine_value; otherwise
//     PermissionDenied RECORD_OUTSIDE_TASK and nothing is released.
//  6. Exactly the requested fields are projected into a
//     google.protobuf.Struct: raw values as stored (integers, reals, text,
//     null; JSON values of an MCP result), derived values as computed,
//     quarantined fields as text. A value without an exact JSON form (a
//     BLOB, an integer beyond 2^53) is refused, never rounded.
//  7. An ambit.receipt.v1.EvidenceReceipt is built: fields sorted, the
//     values and the quarantined fields, [ContentHash] of the values, the
//     record's state version and subject, the read time and the stricter
//     ([Stricter]) of the configured and the contract's provenance; it is
//     signed with the adapter's key (key id = identity).
//  8. The kernel logs the receipt (AdapterService/RecordEvidence); only
//     then are the values released. If it refuses (another subject, a
//     task bound to an older state version) or cannot be reached, nothing
//     is returned.
//
// [Core.Watch] is coupling rule 3 at the moment of change: every
// watch_interval it reads the state version of each record the kernel
// watches (AdapterService/WatchedRecords), an sql source's a few
// statements at a time, and reports each one that changed or disappeared
// (AdapterService/ReportStateChange). The adapter
// starts through the process frame (service.MainSidecar), so its gRPC
// health is SERVING only while the kernel serves, every source is
// readable ([Core.Check]) and the watcher's polls are answered
// ([Core.CheckWatch]), each probed every health_interval.
//
// Refusals map to gRPC statuses in one table ([statuses]), each with an
// ErrorInfo naming an ambit.error.v1.ErrorReason. One JSON log line is
// written per read, naming task, source, record key, field names, receipt
// id and state version; never a value.
//
// [Run] is the ambit-evidence program; [Policy] its role policy (Read:
// agent and governance), [Handler] the gRPC handler.
package evidence
