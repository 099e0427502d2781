// Package ident makes the identifiers Ambit's processes issue: decisions,
// capabilities and approvals in the kernel, evidence, effect and readback
// receipts in the sidecars.
package ident
