// Command ambit-action is the action adapter: it executes refunds into the
// payments ledger under one-time kernel capabilities, idempotently, with
// signed effect receipts. See package action.
//
// Usage:
//
//	ambit-action --config FILE [--listen HOST:PORT] [--addr-file FILE]
//
// It serves until SIGINT or SIGTERM, then drains in-flight calls within the
// configured shutdown_grace.
package main
