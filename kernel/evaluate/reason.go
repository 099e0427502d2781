package evaluate

import "strings"

// Code is a stable, machine-readable reason code.
type Code uint8

// Reason codes. Their String forms are part of the API: never renumber or
// rename one, only add.
const (
	CodeContractExpired Code = iota + 1
	CodeSubjectMismatch
	CodePurposeMismatch
	CodeStateVersionChanged
	CodeFieldsOutsideGrant
	CodeSourceOutsideGrant
	CodeEvidenceTooOld
	CodeUncorroboratedEvidence
	CodeIrreversibleEvidenceTooOld
	CodeToolOutsideGrant
	CodeDestinationOutsideGrant
	CodeCurrencyOutsideGrant
	CodeAmountExceedsHardLimit
	CodeApprovalRequired
	CodeActionCountExceedsGrant
	CodeCumulativeAmountExceedsGrant
	CodeIrreversibleNotPermitted
	CodeIrreversibleApprovalRequired
	CodeSelfFactsOutsideView
	CodeSelfMutationsOutsideGrant
	CodeSelfMutationForbidden
	CodeAllAperturesSatisfied
	CodeContractNotCanonical
	CodeRecordOutsideBinding
	CodeRecordEvidenceMissing
	CodeConstraintViolated
	CodeDestinationUnresolved
	CodeNoTrustedEvidence
	codeEnd
)

var codeNames = [codeEnd]string{
	CodeContractExpired:              "CONTRACT_EXPIRED",
	CodeSubjectMismatch:              "SUBJECT_MISMATCH",
	CodePurposeMismatch:              "PURPOSE_MISMATCH",
	CodeStateVersionChanged:          "STATE_VERSION_CHANGED",
	CodeFieldsOutsideGrant:           "FIELDS_OUTSIDE_GRANT",
	CodeSourceOutsideGrant:           "SOURCE_OUTSIDE_GRANT",
	CodeEvidenceTooOld:               "EVIDENCE_TOO_OLD",
	CodeUncorroboratedEvidence:       "UNCORROBORATED_EVIDENCE",
	CodeIrreversibleEvidenceTooOld:   "IRREVERSIBLE_EVIDENCE_TOO_OLD",
	CodeToolOutsideGrant:             "TOOL_OUTSIDE_GRANT",
	CodeDestinationOutsideGrant:      "DESTINATION_OUTSIDE_GRANT",
	CodeCurrencyOutsideGrant:         "CURRENCY_OUTSIDE_GRANT",
	CodeAmountExceedsHardLimit:       "AMOUNT_EXCEEDS_HARD_LIMIT",
	CodeApprovalRequired:             "APPROVAL_REQUIRED",
	CodeActionCountExceedsGrant:      "ACTION_COUNT_EXCEEDS_GRANT",
	CodeCumulativeAmountExceedsGrant: "CUMULATIVE_AMOUNT_EXCEEDS_GRANT",
	CodeIrreversibleNotPermitted:     "IRREVERSIBLE_NOT_PERMITTED",
	CodeIrreversibleApprovalRequired: "IRREVERSIBLE_APPROVAL_REQUIRED",
	CodeSelfFactsOutsideView:         "SELF_FACTS_OUTSIDE_VIEW",
	CodeSelfMutationsOutsideGrant:    "SELF_MUTATIONS_OUTSIDE_GRANT",
	CodeSelfMutationForbidden:        "SELF_MUTATION_FORBIDDEN",
	CodeAllAperturesSatisfied:        "ALL_APERTURES_SATISFIED",
	CodeContractNotCanonical:         "CONTRACT_NOT_CANONICAL",
	CodeRecordOutsideBinding:         "RECORD_OUTSIDE_BINDING",
	CodeRecordEvidenceMissing:        "RECORD_EVIDENCE_MISSING",
	CodeConstraintViolated:           "CONSTRAINT_VIOLATED",
	CodeDestinationUnresolved:        "DESTINATION_UNRESOLVED",
	CodeNoTrustedEvidence:            "NO_TRUSTED_EVIDENCE",
}

// The seed's reason texts, kept word for word.
var codeTexts = [codeEnd]string{
	CodeContractExpired:              "contract expired",
	CodeSubjectMismatch:              "subject mismatch",
	CodePurposeMismatch:              "purpose mismatch",
	CodeStateVersionChanged:          "state version changed",
	CodeFieldsOutsideGrant:           "fields outside grant",
	CodeSourceOutsideGrant:           "evidence source outside grant",
	CodeEvidenceTooOld:               "evidence is too old",
	CodeUncorroboratedEvidence:       "evidence from untrusted sources needs corroboration by a trusted source or an approval",
	CodeIrreversibleEvidenceTooOld:   "irreversible effect needs fresher evidence",
	CodeToolOutsideGrant:             "action type outside grant",
	CodeDestinationOutsideGrant:      "destination outside grant",
	CodeCurrencyOutsideGrant:         "currency outside grant",
	CodeAmountExceedsHardLimit:       "amount exceeds hard limit",
	CodeApprovalRequired:             "independent approval required",
	CodeActionCountExceedsGrant:      "action count exceeds grant",
	CodeCumulativeAmountExceedsGrant: "cumulative amount exceeds grant",
	CodeIrreversibleNotPermitted:     "irreversible effect not permitted",
	CodeIrreversibleApprovalRequired: "irreversible effect needs an independent approval",
	CodeSelfFactsOutsideView:         "self facts outside view",
	CodeSelfMutationsOutsideGrant:    "self mutations outside grant",
	CodeSelfMutationForbidden:        "self mutation is never a model side effect; request a boundary change",
	CodeAllAperturesSatisfied:        "all three apertures satisfied",
	CodeContractNotCanonical:         "contract is not canonical",
	CodeRecordOutsideBinding:         "action concerns a record outside the binding",
	CodeRecordEvidenceMissing:        "no evidence cites the bound record",
	CodeConstraintViolated:           "constraint violated",
	CodeDestinationUnresolved:        "destination cannot be resolved without evidence of the record",
	CodeNoTrustedEvidence:            "no trusted evidence establishes the record's state",
}

// String returns the stable code, e.g. "AMOUNT_EXCEEDS_HARD_LIMIT".
func (c Code) String() string {
	if c == 0 || c >= codeEnd {
		return "UNSPECIFIED"
	}
	return codeNames[c]
}

// ParseCode returns the code with the given stable name.
func ParseCode(s string) (Code, bool) {
	for c := Code(1); c < codeEnd; c++ {
		if codeNames[c] == s {
			return c, true
		}
	}
	return 0, false
}

// Reason is one finding. Items lists what the finding is about (the
// offending fields, sources or self-facts), sorted; it may alias the owning
// Decision's buffer, so copy a Reason's Items before reusing the Decision.
// A failed constraint carries its declared code and message.
type Reason struct {
	Aperture   Aperture
	Code       Code
	Items      []string
	Constraint string
	Message    string
}

// Detail is the human text, e.g. "fields outside grant: [medical_notes]".
func (r Reason) Detail() string {
	if r.Code == 0 || r.Code >= codeEnd {
		return "unspecified"
	}
	if r.Code == CodeConstraintViolated {
		if r.Message != "" {
			return r.Constraint + ": " + r.Message
		}
		return r.Constraint
	}
	text := codeTexts[r.Code]
	if len(r.Items) == 0 {
		return text
	}
	return text + ": [" + strings.Join(r.Items, " ") + "]"
}

// IsApprovable reports whether an independent approval settles the reason.
// Other review reasons need fresh evidence, a re-bound contract or time.
func (r Reason) IsApprovable() bool {
	switch r.Code {
	case CodeApprovalRequired, CodeIrreversibleApprovalRequired, CodeUncorroboratedEvidence:
		return true
	}
	return false
}
