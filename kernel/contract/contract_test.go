package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/suite"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

const valid = `
contract_id: t
binding: {task_id: t1, subject: employee-7, purpose: expense-refund, state_version: claims-v42, valid_until: "2030-01-01T04:00:00Z"}
evidence:
  fields: [claim_id]
  sources: [{name: claims_db, provenance: PROVENANCE_TRUSTED}]
  max_age_seconds: 86400
action:
  tools:
    - name: refund
      input_schema:
        type: object
        properties:
          claim_id: {type: string}
          payee_id: {type: string}
          amount: {type: object}
      amount_argument: amount
      record: {source: claims_db, argument: claim_id}
      destinations:
        - {name: claimant, when: "args.payee_id == record.claimant_id"}
      constraints:
        - {code: SMALL, message: "at most 50", expression: "args.amount.minor_units <= 5000"}
  max_amount: {currency_code: GBP, minor_units: 10000}
  approval_over: {currency_code: GBP, minor_units: 5000}
  max_actions: 1
reflexive: {visible_facts: [capabilities]}
`

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(string) string
		wantErr string // substring naming the field; "" for success
	}{
		{name: "valid", edit: func(s string) string { return s }},
		{name: "empty subject", edit: func(s string) string { return strings.Replace(s, "subject: employee-7", `subject: ""`, 1) },
			wantErr: "binding.subject"},
		{name: "missing binding", edit: func(s string) string { return strings.Replace(s, "binding:", "ignored_binding:", 1) },
			wantErr: `line 3: ignored_binding: unknown field`},
		{name: "approval threshold above hard limit", edit: func(s string) string {
			return strings.Replace(s, "approval_over: {currency_code: GBP, minor_units: 5000}", "approval_over: {currency_code: GBP, minor_units: 10001}", 1)
		}, wantErr: "action.approval_over: approval threshold GBP 100.01 is above the hard limit GBP 100.00"},
		{name: "negative hard limit", edit: func(s string) string {
			return strings.Replace(s, "minor_units: 10000", "minor_units: -1", 1)
		}, wantErr: "action.max_amount"},
		{name: "negative max age", edit: func(s string) string { return strings.Replace(s, "max_age_seconds: 86400", "max_age_seconds: -5", 1) },
			wantErr: "evidence.max_age_seconds"},
		{name: "negative action count", edit: func(s string) string { return strings.Replace(s, "max_actions: 1", "max_actions: -1", 1) },
			wantErr: "action.max_actions"},
		{name: "unknown field", edit: func(s string) string { return s + "colour: blue\n" },
			wantErr: `line 27: colour: unknown field`},
		{name: "unknown enum name", edit: func(s string) string { return strings.Replace(s, "PROVENANCE_TRUSTED", "PROVENANCE_MAGIC", 1) },
			wantErr: "PROVENANCE_MAGIC"},
		{name: "unknown enum number", edit: func(s string) string { return strings.Replace(s, "PROVENANCE_TRUSTED", "7", 1) },
			wantErr: "evidence.sources[0].provenance: unknown enum value 7"},
		{name: "unset provenance", edit: func(s string) string { return strings.Replace(s, ", provenance: PROVENANCE_TRUSTED", "", 1) },
			wantErr: "evidence.sources[0].provenance"},
		{name: "unknown key in the action aperture", edit: func(s string) string {
			return strings.Replace(s, "reflexive:", "  tools_extra: 1\nreflexive:", 1)
		}, wantErr: `action.tools_extra: unknown field`},
		{name: "schema that does not compile", edit: func(s string) string {
			return strings.Replace(s, "claim_id: {type: string}", "claim_id: {type: 7}", 1)
		}, wantErr: `action.tools[0].input_schema: tool "refund"`},
		{name: "schema not of an object", edit: func(s string) string {
			return strings.Replace(s, "        type: object\n        properties:", "        type: array\n        properties:", 1)
		}, wantErr: `action.tools[0].input_schema: tool "refund": the schema's "type" must be "object"`},
		{name: "destination that does not type-check", edit: func(s string) string {
			return strings.Replace(s, `"args.payee_id == record.claimant_id"`, `"args.payee_id =="`, 1)
		}, wantErr: `action.tools[0].destinations[0].when: tool "refund", destination "claimant"`},
		{name: "destination that is not a condition", edit: func(s string) string {
			return strings.Replace(s, `"args.payee_id == record.claimant_id"`, `"args.payee_id"`, 1)
		}, wantErr: ""},
		{name: "constraint over an unknown variable", edit: func(s string) string {
			return strings.Replace(s, `"args.amount.minor_units <= 5000"`, `"payment.total <= 5000"`, 1)
		}, wantErr: `action.tools[0].constraints[0].expression: tool "refund", constraint SMALL`},
		{name: "amount argument not declared", edit: func(s string) string {
			return strings.Replace(s, "amount_argument: amount", "amount_argument: total", 1)
		}, wantErr: `action.tools[0].amount_argument: tool "refund" declares no argument "total"`},
		{name: "record from an ungranted source", edit: func(s string) string {
			return strings.Replace(s, "record: {source: claims_db", "record: {source: hr_db", 1)
		}, wantErr: `action.tools[0].record.source: tool "refund": source "hr_db" is not granted`},
		// Source "claims/db" with key "c" and source "claims" with key
		// "db/c" would name one record.
		{name: "source name with a slash", edit: func(s string) string {
			return strings.ReplaceAll(s, "claims_db", "claims/db")
		}, wantErr: `evidence.sources[0].name: source "claims/db" contains '/'`},
		{name: "bound record's source with a slash", edit: func(s string) string {
			return strings.Replace(s, "valid_until: \"2030-01-01T04:00:00Z\"}", "valid_until: \"2030-01-01T04:00:00Z\", record: {source: claims/db, key: C-1}}", 1)
		}, wantErr: `binding.record.source: source "claims/db" contains '/'`},
		{name: "bound record", edit: func(s string) string {
			return strings.Replace(s, "valid_until: \"2030-01-01T04:00:00Z\"}", "valid_until: \"2030-01-01T04:00:00Z\", record: {source: claims_db, key: C/1}}", 1)
		}},
		{name: "derived field that does not compile", edit: func(s string) string {
			return strings.Replace(s, "sources: [{name: claims_db, provenance: PROVENANCE_TRUSTED}]",
				"sources: [{name: claims_db, provenance: PROVENANCE_TRUSTED, derived: [{name: small, expression: \"record.total <\"}]}]", 1)
		}, wantErr: `evidence.sources[0].derived[0].expression: source "claims_db", derived field "small"`},
		{name: "raw fields from an instruction-bearing source", edit: func(s string) string {
			return strings.Replace(s, "sources: [{name: claims_db, provenance: PROVENANCE_TRUSTED}]",
				"sources: [{name: claims_db, provenance: PROVENANCE_TRUSTED}, {name: email, provenance: PROVENANCE_INSTRUCTION_BEARING, fields: [body]}]", 1)
		}, wantErr: `evidence.sources[1].fields: source "email" is instruction-bearing`},
		{name: "unknown self fact", edit: func(s string) string { return strings.Replace(s, "[capabilities]", "[capabilities, mood]", 1) },
			wantErr: `reflexive.visible_facts[1]: unknown value "mood"`},
		{name: "duplicate field", edit: func(s string) string {
			return strings.Replace(s, "fields: [claim_id]", "fields: [claim_id, claim_id]", 1)
		},
			wantErr: `evidence.fields[1]: duplicate "claim_id"`},
		{name: "mixed currencies", edit: func(s string) string {
			return strings.Replace(s, "approval_over: {currency_code: GBP", "approval_over: {currency_code: EUR", 1)
		}, wantErr: "action.approval_over.currency_code"},
		{name: "unsupported currency", edit: func(s string) string { return strings.ReplaceAll(s, "GBP", "XXY") },
			wantErr: "action.max_amount"},
		{name: "fractional amount", edit: func(s string) string { return strings.Replace(s, "minor_units: 10000", "minor_units: 100.5", 1) },
			wantErr: "minorUnits"},
		{name: "not yaml", edit: func(string) string { return "{[" }, wantErr: "yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := contract.Parse("test.yaml", []byte(tt.edit(valid)))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if _, err := contract.Compile(c); err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted it, want error naming %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not name %q", err, tt.wantErr)
			}
		})
	}
}

func TestProfilesLoad(t *testing.T) {
	for _, name := range contract.ProfileNames() {
		c, err := contract.Profile(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.GetContractId() != name {
			t.Errorf("profile file %s has contract_id %q", name, c.GetContractId())
		}
	}
	if _, err := contract.Profile("nope"); err == nil {
		t.Error("unknown profile loaded")
	}
}

// The evaluator's enums are numbered like the wire's, so mapping is a cast.
func TestEnumsAligned(t *testing.T) {
	for o := evaluate.Allow; o <= evaluate.Deny; o++ {
		if got := contractv1.Outcome(o).String(); got != "OUTCOME_"+o.String() {
			t.Errorf("outcome %d: wire %s, evaluator %s", o, got, o)
		}
	}
	names := map[evaluate.Aperture]string{evaluate.Binding: "BINDING", evaluate.Epistemic: "EPISTEMIC",
		evaluate.Executive: "EXECUTIVE", evaluate.Reflexive: "REFLEXIVE", evaluate.Whole: "CONTRACT", evaluate.Ledger: "LEDGER"}
	for a, n := range names {
		if got := contractv1.Aperture(a).String(); got != "APERTURE_"+n {
			t.Errorf("aperture %d: wire %s, want APERTURE_%s", a, got, n)
		}
	}
	provs := map[evaluate.Provenance]string{evaluate.Trusted: "TRUSTED", evaluate.Untrusted: "UNTRUSTED", evaluate.InstructionBearing: "INSTRUCTION_BEARING"}
	for p, n := range provs {
		if got := contractv1.Provenance(p).String(); got != "PROVENANCE_"+n {
			t.Errorf("provenance %d: wire %s", p, got)
		}
	}
}

func TestFactsRoundTrip(t *testing.T) {
	eps, err := suite.Load(suite.Extended)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		f := contract.Facts(ep.ProtoFacts())
		if diff := cmp.Diff(ep.ProtoFacts(), contract.FactsProto(&f), cmpProto()); diff != "" {
			t.Fatalf("%s: round trip (-want +got):\n%s", ep.Name, diff)
		}
	}
}

func cmpProto() cmp.Option {
	return cmp.Comparer(func(a, b proto.Message) bool { return proto.Equal(a, b) })
}

// TestToolCheck checks calls against a compiled tool: undeclared arguments,
// schema violations and malformed money are refused, naming the place.
func TestToolCheck(t *testing.T) {
	c, err := contract.Profile("coupled")
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	refund := compiled.Tools["refund"]
	for _, tc := range []struct{ name, args, err string }{
		{"valid", `{"claim_id":"C-1001","amount":{"currency_code":"GBP","minor_units":1740},"payee_id":"employee-7"}`, ""},
		{"extra argument", `{"claim_id":"C-1001","amount":{"currency_code":"GBP","minor_units":1740},"payee_id":"employee-7","memo":"x"}`, `declares no argument memo`},
		{"missing argument", `{"claim_id":"C-1001","payee_id":"employee-7"}`, `at /: missing property 'amount'`},
		{"wrong type", `{"claim_id":7,"amount":{"currency_code":"GBP","minor_units":1740},"payee_id":"employee-7"}`, `at /claim_id`},
		{"fractional money", `{"claim_id":"C-1001","amount":{"currency_code":"GBP","minor_units":17.5},"payee_id":"employee-7"}`, `minor_units`},
		{"unknown field inside money", `{"claim_id":"C-1001","amount":{"currency_code":"GBP","minor_units":1,"fee":2},"payee_id":"employee-7"}`, `amount`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call, err := toolcall.Parse("refund", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			err = refund.Check(call)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if !errors.Is(err, contract.ErrArguments) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Check = %v, want ErrArguments naming %q", err, tc.err)
			}
		})
	}
}

func TestValidateFacts(t *testing.T) {
	tests := []struct {
		name  string
		facts *contractv1.Facts
		want  string
	}{
		{"zero amount", &contractv1.Facts{Amount: &contractv1.Money{CurrencyCode: "GBP"}}, "amount"},
		{"negative amount", &contractv1.Facts{Amount: &contractv1.Money{CurrencyCode: "GBP", MinorUnits: -3}}, "amount"},
		{"bad currency", &contractv1.Facts{Amount: &contractv1.Money{CurrencyCode: "pounds", MinorUnits: 3}}, "amount"},
		{"empty source", &contractv1.Facts{Evidence: []*contractv1.EvidenceItem{{}}}, "evidence[0].source"},
		{"unknown provenance", &contractv1.Facts{Evidence: []*contractv1.EvidenceItem{{Source: "x", Provenance: 9}}}, "evidence[0].provenance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := contract.ValidateFacts(tt.facts)
			if !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrInvalid naming %q", err, tt.want)
			}
		})
	}
}

// TestDuplicateKeysRefused pins the review finding: a second `subject:
// "*"` once replaced the first and widened the binding. Every duplicate,
// in YAML or JSON, under either name of a field, is an error naming its
// line and key path.
func TestDuplicateKeysRefused(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"yaml", "contract_id: t\nbinding:\n  subject: employee-7\n  purpose: expense-refund\n  subject: \"*\"\n", `line 5: binding.subject: duplicate key (first at line 3)`},
		{"json", `{"contract_id": "t", "binding": {"subject": "employee-7", "subject": "*"}}`, `line 1: binding.subject: duplicate key (first at line 1)`},
		{"json and proto names", "contract_id: t\nbinding:\n  task_id: a\n  taskId: b\n", `line 4: binding.taskId: field task_id given twice (first at line 3)`},
		{"unknown field", "contract_id: t\nbinding:\n  subjekt: x\n", `line 3: binding.subjekt: unknown field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.Parse("c.yaml", []byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	for _, dup := range []string{"subject: \"*\"\n", "  subject: \"*\"\n"} {
		in := strings.Replace(valid, "reflexive:", dup+"reflexive:", 1)
		if _, err := contract.Parse("c.yaml", []byte(in)); err == nil {
			t.Errorf("a contract with %q added was accepted", dup)
		}
	}
	if _, err := contract.Parse("c.yaml", []byte(valid)); err != nil {
		t.Errorf("the valid contract: %v", err)
	}
}

// TestUnknownEnumNamesItsPlace: an enum number the schema does not define
// is refused wherever it sits, in a list, a map or a message, with the
// path to it.
func TestUnknownEnumNamesItsPlace(t *testing.T) {
	c, err := contract.Parse("c.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	c.Action.Tools[0].InputSchema.Fields["properties"].GetStructValue().Fields["claim_id"] = &structpb.Value{Kind: &structpb.Value_NullValue{NullValue: 3}}
	_, err = contract.Compile(c)
	want := "action.tools[0].input_schema.fields[properties].struct_value.fields[claim_id].null_value: unknown enum value 3 for google.protobuf.NullValue"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Compile = %v, want it to name %s", err, want)
	}

	// In a list of values, under a schema's field.
	c, err = contract.Parse("c.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	list, err := structpb.NewList([]any{"a", nil})
	if err != nil {
		t.Fatal(err)
	}
	list.Values[1] = structpb.NewNullValue()
	list.Values[1].Kind.(*structpb.Value_NullValue).NullValue = 9
	c.Action.Tools[0].InputSchema.Fields["enum"] = structpb.NewListValue(list)
	_, err = contract.Compile(c)
	want = "action.tools[0].input_schema.fields[enum].list_value.values[1].null_value: unknown enum value 9 for google.protobuf.NullValue"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Compile = %v, want it to name %s", err, want)
	}
}
