# The coupled-strict contract (kernel/contract/profiles/coupled-strict.yaml)
# as a Rego policy over the seed suite's facts
# (kernel/suite/episodes/seed.jsonl): the baseline make bench runs an OPA
# server with, to decide the same 140 proposals the kernel's evaluator
# decides. It checks what the seed's facts exercise — subject, purpose,
# state version, evidence sources, fields and age, tool, destination,
# amount limits, self-queries and self-mutations — and answers the
# evaluator's outcome and reason codes; the benchmark checks that every
# answer matches the evaluator's before it measures.
package ambit.seed

contract := {
	"subject": "employee-7",
	"purpose": "expense-refund",
	"state_version": "claims-v42",
	"fields": {"claim_id", "claimant_id", "receipt_total", "receipt_date", "cost_centre"},
	"sources": {"claims_db", "receipt_upload"},
	"max_age_seconds": 86400,
	"currency": "GBP",
	"max_amount": 10000,
	"approval_over": 5000,
	"tools": {"refund": {"claimant"}},
	"visible_facts": {"capabilities", "uncertainty", "commitments", "expiry"},
}

amount := to_number(input.amount.minor_units)

deny contains "SUBJECT_OUTSIDE_GRANT" if input.subject != contract.subject

deny contains "PURPOSE_OUTSIDE_GRANT" if input.purpose != contract.purpose

deny contains "SOURCE_OUTSIDE_GRANT" if {
	some e in input.evidence
	not e.source in contract.sources
}

deny contains "FIELDS_OUTSIDE_GRANT" if {
	some e in input.evidence
	some f in e.fields
	not f in contract.fields
}

deny contains "TOOL_OUTSIDE_GRANT" if not contract.tools[input.tool]

deny contains "DESTINATION_OUTSIDE_GRANT" if not input.destination in object.get(contract.tools, input.tool, set())

deny contains "CURRENCY_OUTSIDE_GRANT" if input.amount.currency_code != contract.currency

deny contains "AMOUNT_EXCEEDS_HARD_LIMIT" if amount > contract.max_amount

deny contains "SELF_FACTS_OUTSIDE_VIEW" if {
	some q in object.get(input, "self_queries", [])
	not q in contract.visible_facts
}

deny contains "SELF_MUTATIONS_OUTSIDE_GRANT" if count(object.get(input, "self_mutations", [])) > 0

review contains "EVIDENCE_TOO_OLD" if {
	some e in input.evidence
	to_number(e.age_seconds) > contract.max_age_seconds
}

review contains "STATE_VERSION_CHANGED" if input.state_version != contract.state_version

review contains "APPROVAL_REQUIRED" if amount > contract.approval_over

default decision := {"outcome": "ALLOW", "reasons": ["ALL_APERTURES_SATISFIED"]}

decision := {"outcome": "DENY", "reasons": deny} if count(deny) > 0

decision := {"outcome": "REVIEW", "reasons": review} if {
	count(deny) == 0
	count(review) > 0
}
