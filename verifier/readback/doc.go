// Package readback decides whether the system of record shows exactly the
// effect a capability bound. [Check] is a pure function: the capability,
// the effect receipt and the ledger rows read for them in, a status and
// every finding out. It does no I/O and never stops at the first finding,
// so a readback receipt lists every discrepancy.
package readback
