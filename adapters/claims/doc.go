// Package claims holds the demo's two evidence sources, both SQLite tables,
// and the [Connector] through which the evidence adapter reads them.
//
// The claims table is the authoritative record of expense claims. Its rows
// also hold data the refund task must never see (salary, medical notes, bank
// account, disciplinary notes), which is what makes field projection matter.
// The receipts table holds text uploaded by claimants; it may carry injected
// instructions and is classed instruction-bearing by deployment config.
//
// Entry points:
//
//   - [Open] opens (and creates) a database read-write, for seeding and for
//     simulating an HR edit with [EditClaim]; [OpenReadOnly] opens one for
//     the evidence adapter, which never writes.
//   - [Migrate] creates both tables; [Seed] inserts [DemoData].
//   - [NewConnector] returns the [Connector] of one [Kind] of table. It
//     selects only the requested columns, validated against the table's
//     known columns ([ClaimFields], [ReceiptFields]), so a field name never
//     reaches SQL unchecked, and it returns the row's state version
//     ("claims-v42") and subject (the claimant) with the values.
//   - [Version] reads a row's current state version alone, for the action
//     adapter's pre-effect freshness check.
package claims
