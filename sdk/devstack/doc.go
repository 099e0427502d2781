// Package devstack brings up a whole Ambit deployment on one machine, for
// development, tests and demos: the kernel, the evidence adapter, the
// action adapter and the verifier as separate processes on loopback, with
// a development PKI and SQLite files in one folder, configured for the
// example domains it is given. It knows no domain: everything
// domain-specific comes from each example's manifest ([ManifestFile]) and
// files.
//
// [Start] writes the PKI (the four processes, the governance identities
// [Governance] and [PolicyOwner], and the agents [AgentName]), runs each
// example's setup commands and starts its servers, merges the examples'
// declarations (the evidence adapter's sources, the action adapter's
// executors and state checks, the verifier's readbacks) into each
// process's configuration — the same keys a deployment uses — with the
// placeholders ${DATA}, ${DIR} and the servers' addresses filled in,
// starts the four processes on free ports, waits until each is SERVING
// and writes stack.json ([Info]) last.
//
// With Options.Sidecars set to [PerAgentSidecars] the stack runs one
// kernel and, per agent, its own evidence adapter, action adapter, verifier
// and ambit-mcp ([SidecarName]), each sidecar with an identity of its own
// that the kernel's peers.serves binds to the agent, each gateway acting
// as its agent on the task [TaskName]; stack.json lists them
// ([AgentSidecars]) and [Stack.AgentVia] connects an agent through
// another's sidecars.
//
// [Stack.Stop] stops everything with SIGTERM; [Stack.Kill],
// [Stack.Restart] (on the same addresses), [Stack.Wait] and
// Options.Env (e.g. failpoints) exist for crash tests. [Stack.Conn],
// [Stack.Agent] and [Stack.Keys] hand out authenticated clients and the
// signers' keys. `ambitctl dev up`, the end-to-end tests and the demo are
// built on it. [LoadExample] reads a manifest, [FindExamples] finds them,
// [ReadInfo] reads a stack.json.
package devstack
