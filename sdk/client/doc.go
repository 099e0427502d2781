// Package client is the small layer a Go agent uses to work under Ambit:
// read granted evidence, propose a call of a declared tool citing it,
// execute what is allowed and have it read back — over the generated gRPC
// clients, with the details every agent would otherwise re-write: exact
// money, the idempotency key and expiry of a capability, the reasons of a
// decision and of a refusal, and offline verification of a receipt.
//
// Entry points: [Dial] (or [New] over connections you made), [Agent.Read],
// [Agent.Propose], [Agent.Execute], [Agent.Verify], [Agent.Do] (all three
// steps), [Money], [ParseMoney], [Reason] and [VerifyReceipt].
package client
