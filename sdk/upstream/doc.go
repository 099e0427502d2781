// Package upstream classifies the failed calls an Ambit service makes to the
// service it depends on, the kernel, the same way in every service: a
// refusal is the kernel's answer and reaches the client unchanged; no usable
// answer fails closed; the caller's own cancellation is the caller's.
//
// Entry points:
//
//   - [Classify] turns the error of a kernel call into a [*Refusal], the
//     caller's context error, or the service's own fail-closed sentinel.
//   - [Refusal] carries the kernel's status; it implements GRPCStatus, so
//     the status reaches the client as the kernel wrote it.
package upstream
