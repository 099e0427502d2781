// Package server holds the kernel's gRPC handlers: the agent service, the
// adapter service and the governance service, each served on its own
// listener with its own role policy ([AgentPolicy], [AdapterPolicy],
// [GovernancePolicy]). Handlers only check shape, take the caller from its
// certificate, call package authority and map the result; [Status] is the
// one place refusals become gRPC status codes.
package server
