// Package demo drives a scripted agent, through sdk/client, through the
// stories of the two example domains on a running stack (sdk/devstack),
// from the examples' files alone: their contract templates, bound to tasks
// here, and the declarations the stack was configured with.
//
// [Story.RunRefund] tells the expense refund: (a) a routine refund is
// allowed, executed and verified; (b) a receipt carrying injected
// instructions cannot widen the task; (c) a larger refund needs review, is
// approved and executed; (d) the claim changes after review, the kernel
// hears of it without a new read, and the old capability is refused; (e) a
// used capability is replayed and refused; (f) a read of medical notes is
// refused at read time. [Story.RunSupportdesk] tells the support desk,
// through the desk's own MCP server: (g)–(m) reads of a ticket and of an
// instruction-bearing message, a reply, credits within the limit, above
// the approval threshold and over the task's cap, the injected requests
// refused, and an irreversible closing. [Main] is the ambit-demo command;
// [Bind] and [Contract] bind a task to an example's contract.
package demo
