// Command ambit-verifier is the readback verifier: it reads effects back
// through each tool's declared read-only readback, checks them against
// capabilities and effect receipts and signs readback receipts. See package
// verify.
//
// Usage:
//
//	ambit-verifier --config FILE [--listen HOST:PORT] [--addr-file FILE]
//
// It serves until SIGINT or SIGTERM, then drains in-flight calls within the
// configured shutdown_grace.
package main
