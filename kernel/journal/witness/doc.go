// Package witness keeps an independent copy of a log's checkpoints and
// accepts a new one only when a consistency proof shows it extends the last
// one it accepted, as Certificate Transparency's witnesses do. A kernel
// whose database was rolled back to an older copy, or that shows one
// history to some and another to others, signs checkpoints no consistency
// proof can link, and the witness refuses them.
//
// The witness's folder holds the log's pinned verifier key (log.vkey),
// written on first use, and every checkpoint it accepted, laid out as a
// checkpoint directory ([checkpoint.Dir]).
package witness
