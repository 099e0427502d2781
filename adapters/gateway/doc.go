// Package gateway is ambit-mcp, the per-agent MCP gateway: an MCP server
// (stdio or streamable HTTP) that an agent framework connects to as it
// would to any MCP server, and that works for one agent on one task with
// the agent's own key folder. The agent process never holds a
// capability: the gateway proposes, executes and verifies on its behalf.
//
// What a session sees ([NewListing]): exactly the task's granted tools,
// with their declared input schemas, a read tool per granted source
// (read_<source>, its fields limited to the granted names), the
// request_boundary_change tool and the self-view resource
// ambit://self-view. The listing is taken from the kernel's self-view
// (the capabilities fact) each time a client lists tools.
//
// What a call does:
//   - a read tool reads through the evidence adapter; the result holds
//     only the released values, quarantined text set apart and marked,
//     and the signed receipt is kept in the session ([Session]);
//   - a granted tool becomes a proposal citing the session's receipts
//     (newest first, at most 16) with a request id derived from the call
//     ([RequestID]), so that repeating a call repeats its answer; on ALLOW
//     the gateway executes the capability and has the effect read back.
//     On REVIEW the result names the approval, which [Approvals] remembers
//     per call so that the same call made after approval carries it; on
//     DENY the result is an error listing every reason. Nothing is
//     executed on anything but ALLOW.
//
// Results are shaped by [ReadResult], [DecisionResult], [OutcomeResult]
// and [RefusalResult]; their _meta carries the ids under "ambit/" keys
// ([MetaOutcome] and the others).
//
// [Run] is the ambit-mcp program; [Config] its configuration.
package gateway
