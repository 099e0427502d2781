// Package readback holds the declared readbacks of the verifier: for each
// tool, a read-only query of the system of record and the postconditions
// (CEL checks) the effect a capability bound must satisfy there.
//
// A readback is declared as a [Spec]: exactly one connector — [SQL] (the
// declared columns of the rows whose key column equals the effect's
// idempotency key, from a database opened read-only) or [MCP] (a read-only
// tool of an upstream MCP server, its arguments mapped by CEL, the rows
// optionally taken from its result) — and at least one [Check].
//
// Entry points:
//
//   - [Validate] checks declarations without touching a database or a
//     server: names, connectors, check codes, and every expression
//     compiled. Each problem names its key path, e.g.
//     readbacks.<tool>.sql.table.
//   - [Open] compiles the declarations and opens their connectors; an SQL
//     readback's table and columns must exist. [Set.Get] returns a tool's
//     [Readback].
//   - [Bind] turns a capability and its effect receipt into the [Input] of
//     the expressions: args (the call's canonical arguments), call and
//     effect.
//   - [Readback.Read] reads the system of record ([Reading]);
//     [Readback.Check] is pure: it evaluates every check over the reading
//     and returns every finding, never stopping at the first one. A check
//     that does not hold is a finding named by its code; one that cannot be
//     evaluated is the code followed by ":unevaluable", never a pass.
package readback
