// Package demo drives a scripted agent through the expense-refund story
// against a running cluster, using only the generated Go clients: (a) a
// routine refund is allowed, executed and verified; (b) a receipt carrying
// injected instructions leads to a proposal that is denied and a read that
// is refused; (c) a larger refund needs review, is approved and then
// executed; (d) the claim changes after review, so the proposal goes back to
// review and the old capability is refused; (e) a used capability is
// replayed and refused; (f) a read of medical notes is refused at read
// time. [Run] returns an error unless every step happened as expected.
package demo
