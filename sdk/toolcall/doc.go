// Package toolcall reads the arguments of a tool call exactly: one JSON
// object, duplicate keys refused, numbers kept as written. Every process
// that handles a call — the kernel deciding it, the action adapter
// executing it, the verifier reading it back, the MCP gateway and the Go
// client — reads it through [Parse], so all of them see the same values and
// the same canonical bytes.
//
// Entry points: [Parse] decodes and checks; [Call.Canonical] is the form a
// capability binds; [Call.Money] and [Call.String] read typed arguments;
// [Native] turns decoded values into the plain Go values expression
// evaluation takes.
package toolcall
