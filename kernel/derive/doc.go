// Package derive turns what the kernel gathered for a proposal — the
// task's compiled contract, the tool call, the evidence receipts it
// recorded, the records' last seen versions and the task's usage — into
// the evaluator's facts. It is a pure function with no I/O: the kernel
// gathers, derives ([Facts]), evaluates, then persists.
//
// [Plan] tells the gatherer what a call needs before anything is read: the
// record it touches and the currency of its amount.
package derive
