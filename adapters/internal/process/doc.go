// Package process holds the start-up wiring the adapter binaries share:
// their command-line flags ([ParseFlags]) and serving one gRPC server until
// the context ends, reporting its address in an address file ([Serve]).
package process
