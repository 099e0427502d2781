// Package cluster starts Ambit's four real binaries as separate processes on
// loopback — kernel, evidence adapter, action adapter and readback verifier —
// with dev certificates and SQLite files in one folder, and hands out
// mutually authenticated gRPC clients for them.
//
// [Start] creates the PKI, writes every process's configuration, lets the
// caller seed the demo sources, starts the processes on ports they choose
// themselves (":0", reported through address files) and waits until each
// answers its health check. [Cluster.Stop] sends SIGTERM and waits for a
// clean exit; [Cluster.Kill] and [Cluster.Restart] exist for crash tests.
// The demo and the integration tests share it.
package cluster
