// Package evidence is the evidence adapter: it serves
// ambit.evidence.v1.EvidenceService/Read, releasing only the fields a task's
// contract grants, each read with a signed evidence receipt.
//
// A read ([Core.Read]) runs in a fixed order, and fails closed at each step:
//
//  1. The handler checks the request's shape ([ValidateRead]).
//  2. The kernel authorises the read (AdapterService/AuthorizeRead) before
//     anything is read. Its refusals (PermissionDenied naming the field or
//     source, FailedPrecondition, NotFound, InvalidArgument) reach the
//     client unchanged ([upstream.Refusal]); a kernel that cannot be reached is
//     Unavailable "kernel unreachable: nothing was read".
//  3. The source's [claims.Connector] reads only the requested columns.
//  4. An ambit.receipt.v1.EvidenceReceipt is built: fields sorted, the
//     record's state version and subject, the read time, [ContentHash] of
//     the released values and the stricter ([Stricter]) of the configured
//     and the contract's provenance class; it is signed with the adapter's
//     key (key id = identity).
//  5. The kernel logs the receipt (AdapterService/RecordEvidence); only
//     then are values released. If it refuses (e.g. the record belongs to
//     another subject) or cannot be reached, nothing is returned.
//
// One JSON log line is written per read, naming task, source, record key,
// field names, receipt id and state version; never a field value.
//
// [Run] is the ambit-evidence program; [Config] its configuration,
// [Policy] its role policy (Read: agent and governance), [Handler] the gRPC
// handler.
package evidence
