// Package examples holds the example domains Ambit governs, each purely as
// configuration: a contract template and the declarations of the evidence
// adapter, the action adapter and the verifier. No domain word lives in
// Ambit's own code; it lives here.
//
//   - expense-refund: the seed's story. Sources and the payments system of
//     record are SQLite tables (package refunddata makes them); the refund
//     executor and its readback are SQL.
//   - supportdesk: a support desk reached through its own MCP server
//     (command supportdesk-mcp, package desk); sources, executors and
//     readbacks are MCP tools, and closing a ticket is irreversible.
//
// Entry points: [File] returns one of a domain's files as shipped;
// [Expand] returns it with its placeholders (${DATA}, ${SUPPORTDESK_URL})
// replaced, ready to be merged into a process's configuration.
package examples
