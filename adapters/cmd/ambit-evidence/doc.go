// Command ambit-evidence is the evidence adapter: it serves projected reads
// of the configured sources with signed evidence receipts. See package
// evidence.
//
// Usage:
//
//	ambit-evidence --config FILE [--listen HOST:PORT] [--addr-file FILE]
//
// It serves until SIGINT or SIGTERM, then drains in-flight calls within the
// configured shutdown_grace.
package main
