// Package gcpace paces a long-running process's garbage collector by how
// fast it allocates. Go collects each time the heap has grown by as much
// as the last collection left live (GOGC=100). A process that keeps
// little and allocates much per call, as a busy Ambit process does, then
// collects many times a second, and pays each collection's fixed costs
// (its phases, scanning every goroutine's stack) again and again. [Keep]
// lets such a process's heap grow by what it allocates in [Interval],
// up to a headroom, so that it collects about twice a second instead. A
// process that allocates slowly, or keeps more than that, is paced as Go
// paces it: a larger heap costs a call that allocates into it fresh,
// cold memory, which one call at a time does not win back.
package gcpace
