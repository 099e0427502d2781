package gateway_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ambitkernel/ambit/adapters/gateway"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
)

func schema(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// refundView is the self-view of a task under the expense-refund
// example's contract, as the kernel answers the capabilities fact.
func refundView(t *testing.T) *agentv1.GetSelfViewResponse {
	return &agentv1.GetSelfViewResponse{
		Capabilities: []string{"refund"},
		Purpose:      "expense-refund",
		Record:       &contractv1.RecordRef{Source: "claims_db", Key: "C-1001"},
		Tools: []*agentv1.ToolSpec{{
			Name:        "refund",
			Description: "Refund an expense claim to its claimant, with a reason code.",
			InputSchema: schema(t, map[string]any{
				"type": "object", "required": []any{"claim_id", "amount", "payee_id"}, "additionalProperties": false,
				"properties": map[string]any{
					"claim_id": map[string]any{"type": "string", "minLength": 1, "maxLength": 64},
					"amount": map[string]any{"type": "object", "required": []any{"currency_code", "minor_units"}, "additionalProperties": false,
						"properties": map[string]any{
							"currency_code": map[string]any{"type": "string", "pattern": "^[A-Z]{3}$"},
							"minor_units":   map[string]any{"type": "integer", "minimum": 1},
						}},
					"payee_id":    map[string]any{"type": "string", "minLength": 1, "maxLength": 64},
					"reason_code": map[string]any{"type": "string", "maxLength": 64},
				},
			}),
		}},
		Sources: []*agentv1.SourceSpec{
			{Name: "claims_db", Provenance: contractv1.Provenance_PROVENANCE_TRUSTED,
				Fields: []string{"claim_id", "claimant_id", "receipt_total", "receipt_date", "cost_centre"}},
			{Name: "receipt_upload", Provenance: contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING,
				Fields: []string{"receipt_total_within_limit", "receipt_text"}, Quarantined: []string{"receipt_text"}},
		},
	}
}

// TestListingGolden pins exactly what a refund task lists: the granted
// tool with its declared schema, a read tool per source whose fields are
// the granted names, and the boundary-change tool.
func TestListingGolden(t *testing.T) {
	l, err := gateway.NewListing(refundView(t))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "listing.json", l.Tools)
	want := map[string]gateway.ReadSpec{
		"read_claims_db": {Source: "claims_db", Fields: []string{"claim_id", "claimant_id", "receipt_total", "receipt_date", "cost_centre"}},
		"read_receipt_upload": {Source: "receipt_upload", Fields: []string{"receipt_total_within_limit", "receipt_text"},
			Quarantined: []string{"receipt_text"}},
	}
	if diff := cmp.Diff(want, l.Reads); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"refund": true}, l.Effects); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
}

func TestListing(t *testing.T) {
	objectTool := func(name string) *agentv1.ToolSpec {
		return &agentv1.ToolSpec{Name: name, InputSchema: schema(t, map[string]any{"type": "object"})}
	}
	for _, tc := range []struct {
		name     string
		view     *agentv1.GetSelfViewResponse
		tools    []string
		unlisted []string
		err      string
	}{
		{name: "nothing granted", view: &agentv1.GetSelfViewResponse{}, tools: []string{"request_boundary_change"}},
		{name: "a grant that ran out lists no tool, sources stay readable",
			view:  &agentv1.GetSelfViewResponse{Sources: []*agentv1.SourceSpec{{Name: "s", Fields: []string{"f"}}}},
			tools: []string{"read_s", "request_boundary_change"}},
		{name: "a source with no field granted has no read tool",
			view:     &agentv1.GetSelfViewResponse{Sources: []*agentv1.SourceSpec{{Name: "s"}}},
			tools:    []string{"request_boundary_change"},
			unlisted: []string{`source "s": no field is granted`}},
		{name: "a source whose name cannot be a tool name has no read tool",
			view:     &agentv1.GetSelfViewResponse{Sources: []*agentv1.SourceSpec{{Name: "a b", Fields: []string{"f"}}}},
			tools:    []string{"request_boundary_change"},
			unlisted: []string{`source "a b": "read_a b" is not a valid MCP tool name`}},
		{name: "a granted tool named like a read tool",
			view: &agentv1.GetSelfViewResponse{Tools: []*agentv1.ToolSpec{objectTool("read_s")},
				Sources: []*agentv1.SourceSpec{{Name: "s", Fields: []string{"f"}}}},
			err: `granted tool "read_s" has the name of one of ambit-mcp's own tools`},
		{name: "a granted tool named like the boundary tool",
			view: &agentv1.GetSelfViewResponse{Tools: []*agentv1.ToolSpec{objectTool("request_boundary_change")}},
			err:  `granted tool "request_boundary_change" has the name of one of ambit-mcp's own tools`},
		{name: "a granted tool without a schema",
			view: &agentv1.GetSelfViewResponse{Tools: []*agentv1.ToolSpec{{Name: "t"}}},
			err:  `granted tool "t": input schema: none declared`},
		{name: "a granted tool whose arguments are not an object",
			view: &agentv1.GetSelfViewResponse{Tools: []*agentv1.ToolSpec{{Name: "t", InputSchema: schema(t, map[string]any{"type": "string"})}}},
			err:  `granted tool "t": input schema: "type" must be "object"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := gateway.NewListing(tc.view)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range l.Tools {
				names = append(names, tool.Name)
			}
			if diff := cmp.Diff(tc.tools, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unlisted, l.Unlisted); diff != "" {
				t.Errorf("unlisted (-want +got):\n%s", diff)
			}
		})
	}
}
