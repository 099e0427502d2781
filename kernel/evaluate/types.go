package evaluate

import (
	"time"
)

// Outcome is a decision's verdict. The zero value is unset.
type Outcome uint8

// Outcomes.
const (
	Allow Outcome = iota + 1
	Review
	Deny
)

func (o Outcome) String() string {
	switch o {
	case Allow:
		return "ALLOW"
	case Review:
		return "REVIEW"
	case Deny:
		return "DENY"
	}
	return "UNSPECIFIED"
}

// Aperture tags a reason with the part of the contract it concerns.
type Aperture uint8

// Apertures.
const (
	Binding Aperture = iota + 1
	Epistemic
	Executive
	Reflexive
	Whole  // the whole contract: the ALLOW reason
	Ledger // the authority ledger: the contract is not canonical
)

func (a Aperture) String() string {
	switch a {
	case Binding:
		return "BINDING"
	case Epistemic:
		return "E"
	case Executive:
		return "A"
	case Reflexive:
		return "R"
	case Whole:
		return "CONTRACT"
	case Ledger:
		return "LEDGER"
	}
	return "UNSPECIFIED"
}

// Provenance classifies evidence; higher values carry less authority.
type Provenance uint8

// Provenance classes. Unset evidence provenance means "the class the contract
// gives the source".
const (
	ProvenanceUnset Provenance = iota
	Trusted
	Untrusted
	InstructionBearing
)

// Money is an exact amount in integer minor units. A zero Currency means no
// amount.
type Money struct {
	Currency string
	Minor    int64
}

// IsZero reports whether m holds no amount.
func (m Money) IsZero() bool { return m.Currency == "" && m.Minor == 0 }

// Source is a readable source and the provenance the contract gives it.
type Source struct {
	Name       string
	Provenance Provenance
	// Fields are the field names the source may release (raw, derived and
	// quarantined); nil means the contract's Fields.
	Fields []string
}

// Tool is a granted tool: its name and the destination classes it may
// reach.
type Tool struct {
	Name         string
	Destinations []string
}

// Contract is a compiled contraction contract. "*" in Subject, Purpose or
// StateVersion matches anything.
type Contract struct {
	Subject      string
	Purpose      string
	StateVersion string
	ValidUntil   time.Time
	// Record is the authoritative record ("source/key") the contract is
	// bound to; "" binds none.
	Record string

	// E
	Fields        []string
	Sources       []Source
	MaxAgeSeconds int64

	// A
	Tools             []Tool
	MaxAmount         Money
	ApprovalOver      Money
	MaxActions        int32
	MaxCumulative     Money // zero: no cumulative limit
	AllowIrreversible bool

	// R
	VisibleFacts []string
	MutableFacts []string

	Coupling Coupling
}

// Coupling holds the switches of the four coupling rules.
type Coupling struct {
	// Rule 1: untrusted evidence alone never authorises an effect.
	RequireTrustedCorroboration bool
	// Rule 2: irreversible effects need evidence at most this old (0: off)
	// and, if set, an approval.
	IrreversibleMaxAgeSeconds    int64
	IrreversibleRequiresApproval bool
	// Rule 3 is enforced by the kernel (revocation); the evaluator sees its
	// effect through Facts.CurrentStateVersion.
	RevokeOnStateChange bool
	// Rule 4: self-mutation is always denied.
	ForbidSelfMutation bool
}

// Evidence is one read supporting a proposal.
type Evidence struct {
	Source     string
	Record     string // "source/key" of the record read, when known
	Fields     []string
	AgeSeconds int64
	Provenance Provenance
	// Quarantined evidence released only quarantined text: it never
	// supports an effect.
	Quarantined bool
}

// Violation is a declared constraint a call fails.
type Violation struct {
	Code    string
	Message string
}

// Facts are the inputs of one evaluation.
type Facts struct {
	Subject             string
	Purpose             string
	StateVersion        string
	CurrentStateVersion string // "" when unknown
	// Record is the record ("source/key") the action concerns, when known.
	Record string
	// ContractClass is the ledger class of the contract when it is not
	// CANONICAL ("" when it is): such a contract never yields ALLOW.
	ContractClass string
	Evidence      []Evidence
	Tool          string
	Destination   string
	// DestinationUnresolved: the destination class could not be decided
	// for want of evidence of the record.
	DestinationUnresolved bool
	// Violations are the tool's declared constraints the call fails.
	Violations      []Violation
	Amount          Money // zero when the action moves no money
	ActionCount     int32
	PriorAmount     Money
	Irreversible    bool
	ApprovalPresent bool
	SelfQueries     []string
	SelfMutations   []string
}
