// Command ambit-action is the action adapter: it performs calls of
// declared tools through their configured executors (SQL, HTTP, MCP) under
// one-time kernel capabilities, at most once per idempotency key, with
// signed effect receipts. See package action.
//
// Usage:
//
//	ambit-action --config FILE [--listen HOST:PORT] [--addr-file FILE]
//
// It serves until SIGINT or SIGTERM, then drains in-flight calls within the
// configured shutdown_grace.
package main
