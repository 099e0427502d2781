// Package refunddata holds the expense-refund example's data: the schemas
// of its three tables and the demo rows.
//
// The claims table is the authoritative record of expense claims (the
// evidence source claims_db). Its rows also hold fake but obviously
// sensitive values (salary, medical notes, bank account, disciplinary
// notes) that a refund task must never see: the evidence declaration does
// not even list those columns. The receipts table holds text uploaded by
// claimants (the source receipt_upload, classed instruction-bearing);
// receipt R-2002 carries an injected instruction. Both live in one SQLite
// file, [ClaimsFile]. The payments table, in [PaymentsFile], is what the
// declared refund executor writes and the verifier reads back: one row per
// idempotency key, which a UNIQUE constraint guarantees.
//
// Entry points:
//
//   - [Create] makes both files in a data folder and seeds [DemoData].
//   - [Migrate] and [MigratePayments] create the tables in an open
//     database (see package sqldb); [Seed] inserts rows without undoing an
//     edit.
//   - [EditClaim] changes a claim as an HR correction would, moving its
//     state version (claims-v42 to claims-v43).
package refunddata
