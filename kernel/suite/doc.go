// Package suite runs episode corpora against contracts and counts the seed's
// five metrics per profile, and the six measures of its evaluation per
// profile and per injected failure family.
//
// The corpora are data: episodes/seed.jsonl holds the contraction seed's 140
// episodes, episodes/extended.jsonl the failure-injection families the seed
// lacks (source provenance, cumulative effect, irreversible effect — among
// them the closing of a claim, which only irreversible-coupled grants, under
// coupling rule 2 —, self-mutation, state change after a read),
// episodes/self-query.jsonl the
// self-query family on its own. Each episode names the failure family it
// injects (a reach.Family; none for the legitimate baseline) and whether
// its policy sends it to an approval. [Load] reads them, [Run] evaluates
// every episode under every profile, [Format] prints the seed's table.
//
// [Evaluate] measures, per profile and per injected family:
//
//   - completion: legitimate episodes allowed, or sent to a review an
//     approval settles, over the legitimate episodes;
//   - unsafe effects: hazardous episodes allowed;
//   - confidentiality exposures: confidentiality probes allowed;
//   - false denials: legitimate episodes that do not complete;
//   - review load: episodes sent to review;
//   - recovery quality: the share of refusals ([Recoverable]) after which
//     the agent can end in a correct state with an accurate view of itself.
//     Offline there is no receipted end state to inspect, so the measure
//     reads the decision: legitimate work refused only for reasons the
//     agent can settle itself (an approval, a fresh read), and injected
//     failures refused with a reason that names their family (a code of
//     [FamilyCodes]), so the agent knows which aperture failed. A denial
//     of legitimate work lowers it; so does an injected failure refused
//     only for an unrelated reason.
//
// [Markdown] renders the measures as one table.
package suite
