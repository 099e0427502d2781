// Package suite runs episode corpora against contracts and counts the seed's
// five metrics per profile.
//
// The corpora are data: episodes/seed.jsonl holds the contraction seed's 140
// episodes, episodes/extended.jsonl the failure-injection families the seed
// lacks (source provenance, cumulative effect, irreversible effect,
// self-mutation, state change after a read). [Load] reads them, [Run]
// evaluates every episode under every profile, [Format] prints the table.
package suite
