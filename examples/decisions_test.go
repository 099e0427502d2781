package examples_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/derive"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// read is one evidence read as its receipt records it.
type read struct {
	source, key, subject, version string
	values                        map[string]any
	quarantined                   []string
	age                           time.Duration
}

func (r read) with(k string, v any) read {
	r.values = maps.Clone(r.values)
	r.values[k] = v
	return r
}

func (r read) aged(d time.Duration) read { r.age = d; return r }

// decide derives and evaluates one call under a domain's contract, as the
// kernel does from recorded receipts, and returns the outcome and every
// reason's code (a failed constraint as CONSTRAINT_VIOLATED:CODE).
func decide(t *testing.T, c *contract.Compiled, now time.Time, tool, args string, reads []read, versions map[string]string, usage derive.Usage, approved bool) []string {
	t.Helper()
	call, err := toolcall.Parse(tool, args)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := derive.PlanCall(c, call)
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	var ev []*receiptv1.EvidenceReceipt
	for _, r := range reads {
		values, err := structpb.NewStruct(r.values)
		if err != nil {
			t.Fatal(err)
		}
		var prov receiptv1.EvidenceReceipt
		for _, s := range c.Proto.GetEvidence().GetSources() {
			if s.GetName() == r.source {
				prov.Provenance = s.GetProvenance()
			}
		}
		ev = append(ev, &receiptv1.EvidenceReceipt{
			Source: r.source, RecordKey: r.key, Subject: r.subject, StateVersion: r.version,
			Fields: slices.Sorted(maps.Keys(r.values)), Values: values, Quarantined: r.quarantined,
			ReadAt: timestamppb.New(now.Add(-r.age)), Provenance: prov.Provenance,
		})
	}
	facts := derive.Facts(&derive.Input{Contract: c, TaskID: "task-1", Purpose: c.Proto.GetBinding().GetPurpose(),
		Call: call, Plan: plan, Evidence: ev, Versions: versions, Usage: usage, Approved: approved, Now: now})
	var d evaluate.Decision
	if err := evaluate.Evaluate(&facts, c.Eval, now, &d); err != nil {
		t.Fatal(err)
	}
	out := []string{d.Outcome.String()}
	for _, r := range d.Reasons {
		code := r.Code.String()
		if r.Constraint != "" {
			code += ":" + r.Constraint
		}
		out = append(out, code)
	}
	return out
}

type decision struct {
	name     string
	tool     string
	args     string
	reads    []read
	versions map[string]string // default: each read's own version
	usage    derive.Usage
	approved bool
	want     []string
}

func runDecisions(t *testing.T, name, record string, tests []decision) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	c, err := contract.Parse(name, bound(t, name, "task-1", record, now.Add(4*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			versions := tt.versions
			if versions == nil {
				versions = map[string]string{}
				for _, r := range tt.reads {
					versions[r.source+"/"+r.key] = r.version
				}
			}
			got := decide(t, compiled, now, tt.tool, tt.args, tt.reads, versions, tt.usage, tt.approved)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExpenseRefundDecisions is what the expense-refund contract decides
// for the story's calls.
func TestExpenseRefundDecisions(t *testing.T) {
	claim := read{source: "claims_db", key: "C-1001", subject: "employee-7", version: "claims-v42", age: time.Minute,
		values: map[string]any{"claim_id": "C-1001", "claimant_id": "employee-7", "receipt_total": "17.40",
			"receipt_date": "2026-03-02", "cost_centre": "CC-410 Field Sales"}}
	receipt := read{source: "receipt_upload", key: "R-2001", subject: "employee-7", version: "receipts-v42", age: time.Minute,
		values: map[string]any{"receipt_total_within_limit": true}}
	refund := func(claim, payee string, minor int, reason string) string {
		r := ""
		if reason != "" {
			r = `, "reason_code": "` + reason + `"`
		}
		return `{"claim_id": "` + claim + `", "payee_id": "` + payee + `", "amount": {"currency_code": "GBP", "minor_units": ` + strconv.Itoa(minor) + `}` + r + `}`
	}
	runDecisions(t, examples.ExpenseRefund, "C-1001", []decision{
		{name: "the routine refund", tool: "refund", args: refund("C-1001", "employee-7", 1740, "TRAVEL"), reads: []read{claim, receipt},
			want: []string{"ALLOW", "ALL_APERTURES_SATISFIED"}},
		{name: "no reason code", tool: "refund", args: refund("C-1001", "employee-7", 1740, ""), reads: []read{claim},
			want: []string{"DENY", "CONSTRAINT_VIOLATED:REASON_CODE_MISSING"}},
		{name: "another payee", tool: "refund", args: refund("C-1001", "employee-9", 1740, "TRAVEL"), reads: []read{claim},
			want: []string{"DENY", "DESTINATION_OUTSIDE_GRANT"}},
		{name: "above the approval threshold", tool: "refund", args: refund("C-1001", "employee-7", 7400, "TRAVEL"), reads: []read{claim},
			want: []string{"REVIEW", "APPROVAL_REQUIRED"}},
		{name: "above the approval threshold, approved", tool: "refund", args: refund("C-1001", "employee-7", 7400, "TRAVEL"), reads: []read{claim}, approved: true,
			want: []string{"ALLOW", "ALL_APERTURES_SATISFIED"}},
		{name: "above the hard limit", tool: "refund", args: refund("C-1001", "employee-7", 12000, "TRAVEL"), reads: []read{claim}, approved: true,
			want: []string{"DENY", "AMOUNT_EXCEEDS_HARD_LIMIT", "CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}},
		{name: "another claim", tool: "refund", args: refund("C-1002", "employee-7", 1740, "TRAVEL"), reads: []read{claim},
			want: []string{"DENY", "RECORD_OUTSIDE_BINDING", "NO_TRUSTED_EVIDENCE", "DESTINATION_UNRESOLVED"}},
		{name: "a second refund", tool: "refund", args: refund("C-1001", "employee-7", 100, "TRAVEL"), reads: []read{claim}, usage: derive.Usage{Count: 1, Minor: 1740},
			want: []string{"DENY", "ACTION_COUNT_EXCEEDS_GRANT"}},
		{name: "the claim changed since it was read", tool: "refund", args: refund("C-1001", "employee-7", 1740, "TRAVEL"), reads: []read{claim},
			versions: map[string]string{"claims_db/C-1001": "claims-v43"},
			want:     []string{"REVIEW", "STATE_VERSION_CHANGED"}},
		{name: "only the uploaded receipt read", tool: "refund", args: refund("C-1001", "employee-7", 1740, "TRAVEL"), reads: []read{receipt},
			want: []string{"REVIEW", "RECORD_EVIDENCE_MISSING", "UNCORROBORATED_EVIDENCE", "DESTINATION_UNRESOLVED"}},
	})
}

// TestSupportdeskDecisions is what the supportdesk contract decides,
// including the calls the injected message asks for.
func TestSupportdeskDecisions(t *testing.T) {
	ticket := read{source: "tickets", key: "T-501", subject: "cust-42", version: "ticket-v3", age: time.Minute,
		values: map[string]any{"ticket_id": "T-501", "customer_id": "cust-42", "subject": "Order 8812 arrived damaged",
			"status": "open", "priority": "normal", "credit_total_minor": 0}}
	message := read{source: "messages", key: "M-901", subject: "cust-42", version: "message-v1", age: time.Minute,
		values: map[string]any{"asks_for_refund": true, "body": "(the customer's text)"}, quarantined: []string{"body"}}
	derivedOnly := read{source: "messages", key: "M-901", subject: "cust-42", version: "message-v1", age: time.Minute,
		values: map[string]any{"asks_for_refund": true}}
	credit := func(customer, currency string, minor int) string {
		return `{"ticket_id": "T-501", "customer_id": "` + customer + `", "amount": {"currency_code": "` + currency + `", "minor_units": ` + strconv.Itoa(minor) + `}}`
	}
	runDecisions(t, examples.Supportdesk, "T-501", []decision{
		{name: "reply to the customer", tool: "reply_to_customer", args: `{"ticket_id": "T-501", "customer_id": "cust-42", "body": "Sorry!"}`,
			reads: []read{ticket, message}, want: []string{"ALLOW", "ALL_APERTURES_SATISFIED"}},
		{name: "reply to another customer", tool: "reply_to_customer", args: `{"ticket_id": "T-501", "customer_id": "cust-99", "body": "Hi"}`,
			reads: []read{ticket}, want: []string{"DENY", "DESTINATION_OUTSIDE_GRANT"}},
		{name: "a reply too long", tool: "reply_to_customer", args: `{"ticket_id": "T-501", "customer_id": "cust-42", "body": "` + strings.Repeat("x", 2001) + `"}`,
			reads: []read{ticket}, want: []string{"DENY", "CONSTRAINT_VIOLATED:REPLY_TOO_LONG"}},
		{name: "a small credit", tool: "issue_credit", args: credit("cust-42", "GBP", 1500),
			reads: []read{ticket, derivedOnly}, want: []string{"ALLOW", "ALL_APERTURES_SATISFIED"}},
		{name: "a credit above the approval threshold", tool: "issue_credit", args: credit("cust-42", "GBP", 2500),
			reads: []read{ticket}, want: []string{"REVIEW", "APPROVAL_REQUIRED"}},
		{name: "the injected credit: GBP 500 to cust-99", tool: "issue_credit", args: credit("cust-99", "GBP", 50000),
			reads: []read{ticket, message}, want: []string{"DENY", "DESTINATION_OUTSIDE_GRANT", "AMOUNT_EXCEEDS_HARD_LIMIT", "CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}},
		{name: "a credit beyond the task's cap", tool: "issue_credit", args: credit("cust-42", "GBP", 1500),
			reads: []read{ticket}, usage: derive.Usage{Count: 2, Minor: 5000}, approved: true,
			want: []string{"DENY", "CUMULATIVE_AMOUNT_EXCEEDS_GRANT"}},
		{name: "a credit in another currency", tool: "issue_credit", args: credit("cust-42", "EUR", 1500),
			reads: []read{ticket}, want: []string{"DENY", "CURRENCY_OUTSIDE_GRANT"}},
		{name: "a credit on a closed ticket", tool: "issue_credit", args: credit("cust-42", "GBP", 1500),
			reads: []read{ticket.with("status", "closed")}, want: []string{"DENY", "CONSTRAINT_VIOLATED:TICKET_NOT_OPEN"}},
		// The ticket's status is unknown, so its constraint fails closed.
		{name: "a credit backed by the message alone", tool: "issue_credit", args: credit("cust-42", "GBP", 1500),
			reads: []read{derivedOnly}, want: []string{"DENY", "CONSTRAINT_VIOLATED:TICKET_NOT_OPEN", "RECORD_EVIDENCE_MISSING", "UNCORROBORATED_EVIDENCE", "DESTINATION_UNRESOLVED"}},
		{name: "a fifth action", tool: "reply_to_customer", args: `{"ticket_id": "T-501", "customer_id": "cust-42", "body": "Again"}`,
			reads: []read{ticket}, usage: derive.Usage{Count: 4}, want: []string{"DENY", "ACTION_COUNT_EXCEEDS_GRANT"}},
		{name: "close the ticket", tool: "close_ticket", args: `{"ticket_id": "T-501"}`,
			reads: []read{ticket}, want: []string{"REVIEW", "IRREVERSIBLE_APPROVAL_REQUIRED"}},
		{name: "close the ticket, approved", tool: "close_ticket", args: `{"ticket_id": "T-501"}`,
			reads: []read{ticket}, approved: true, want: []string{"ALLOW", "ALL_APERTURES_SATISFIED"}},
		{name: "close on a ten-minute-old read", tool: "close_ticket", args: `{"ticket_id": "T-501"}`,
			reads: []read{ticket.aged(10 * time.Minute)}, approved: true, want: []string{"REVIEW", "IRREVERSIBLE_EVIDENCE_TOO_OLD"}},
		{name: "the injected closing of another ticket", tool: "close_ticket", args: `{"ticket_id": "T-777"}`,
			reads: []read{ticket, message}, approved: true, want: []string{"DENY", "RECORD_OUTSIDE_BINDING", "CONSTRAINT_VIOLATED:TICKET_NOT_OPEN", "DESTINATION_UNRESOLVED"}},
		{name: "a credit after the ticket changed", tool: "issue_credit", args: credit("cust-42", "GBP", 1500),
			reads: []read{ticket}, versions: map[string]string{"tickets/T-501": "ticket-v4"}, want: []string{"REVIEW", "STATE_VERSION_CHANGED"}},
	})
}
