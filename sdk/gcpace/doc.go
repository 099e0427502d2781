// Package gcpace paces a long-running process's garbage collector by
// what it allocates as well as by what it keeps. Go collects each time
// the heap has grown by as much as the last collection left live
// (GOGC=100). A process that keeps little and allocates much per call,
// as every Ambit process does, then collects many times a second, and
// each collection's fixed costs (its phases, scanning every goroutine's
// stack) are paid per call. [Keep] lets the heap grow by at least a
// headroom between collections, and by the live heap once that is
// larger, so a process that keeps much is paced exactly as Go paces it.
package gcpace
