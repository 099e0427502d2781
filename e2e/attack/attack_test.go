package attack

import (
	"context"
	"errors"
	"strings"
	"testing"

	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// canned is a connection that answers every call with reply or err.
type canned struct {
	reply proto.Message
	err   error
}

func (c canned) Invoke(_ context.Context, _ string, _, reply any, _ ...grpc.CallOption) error {
	if c.err != nil {
		return c.err
	}
	proto.Merge(reply.(proto.Message), c.reply)
	return nil
}

func (c canned) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("no streams")
}

// TestRecorderFindsCanaries: a canary is found wherever a response can
// carry it — a released value, a signed payload, an error's message or
// its details — and a response without it finds nothing.
func TestRecorderFindsCanaries(t *testing.T) {
	values, err := structpb.NewStruct(map[string]any{"claim_id": "C-1", "note": "CANARY-value"})
	if err != nil {
		t.Fatal(err)
	}
	withDetail, err := status.New(codes.PermissionDenied, "refused").WithDetails(&errdetails.ErrorInfo{
		Reason: "FIELDS_OUTSIDE_GRANT", Domain: "ambit", Metadata: map[string]string{"field": "CANARY-detail"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		conn  canned
		reply proto.Message
		want  []string
	}{
		{"a released value", canned{reply: &evidencev1.ReadResponse{Values: values}}, &evidencev1.ReadResponse{}, []string{"CANARY-value"}},
		{"a signed payload", canned{reply: &agentv1.SubmitProposalResponse{Capability: &receiptv1.Envelope{Payload: []byte("\x0a\x0cCANARY-payload")}}},
			&agentv1.SubmitProposalResponse{}, []string{"CANARY-payload"}},
		{"an error's message", canned{err: status.Error(codes.NotFound, "no record CANARY-message")}, &evidencev1.ReadResponse{}, []string{"CANARY-message"}},
		{"an error's details", canned{err: withDetail.Err()}, &evidencev1.ReadResponse{}, []string{"CANARY-detail"}},
		{"nothing", canned{reply: &evidencev1.ReadResponse{}}, &evidencev1.ReadResponse{}, nil},
	}
	canaries := []string{"CANARY-value", "CANARY-payload", "CANARY-message", "CANARY-detail"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			conn := &recording{tt.conn, r}
			_ = conn.Invoke(context.Background(), "/m", nil, tt.reply)
			if diff := cmp.Diff(tt.want, r.find(canaries)); diff != "" {
				t.Errorf("found (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnauthorised: each intended effect accounts for one effect found,
// so a duplicate, another party or another amount is unauthorised.
func TestUnauthorised(t *testing.T) {
	pay := effect{kind: "payment", record: "C-1", party: "employee-7", minor: 1740, body: "GBP"}
	other := pay
	other.party = "employee-9"
	more := pay
	more.minor = 9999
	tests := []struct {
		name          string
		got, intended []effect
		want          []effect
	}{
		{"exactly what was intended", []effect{pay}, []effect{pay}, nil},
		{"intended, not done", nil, []effect{pay}, nil},
		{"twice", []effect{pay, pay}, []effect{pay}, []effect{pay}},
		{"another party", []effect{other}, []effect{pay}, []effect{other}},
		{"another amount", []effect{pay, more}, []effect{pay}, []effect{more}},
		{"nothing intended", []effect{pay}, nil, []effect{pay}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, unauthorised(tt.got, tt.intended), cmp.AllowUnexported(effect{})); diff != "" {
				t.Errorf("unauthorised (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForge: an altered capability keeps its signature and changes its
// call.
func TestForge(t *testing.T) {
	payload, err := proto.Marshal(&receiptv1.Capability{CapabilityId: "cap-1", Call: &contractv1.ToolCall{
		Tool: "refund", ArgumentsJson: `{"amount":{"currency_code":"GBP","minor_units":1740},"payee_id":"employee-7"}`}})
	if err != nil {
		t.Fatal(err)
	}
	env := &receiptv1.Envelope{Payload: payload, KeyId: "kernel", Signature: []byte("sig")}
	forged, err := forge(env)
	if err != nil {
		t.Fatal(err)
	}
	var got receiptv1.Capability
	if err := proto.Unmarshal(forged.GetPayload(), &got); err != nil {
		t.Fatal(err)
	}
	if args := got.GetCall().GetArgumentsJson(); !strings.Contains(args, `"minor_units":91740`) || !strings.Contains(args, `"payee_id":"xemployee-7"`) {
		t.Errorf("forged arguments %s", args)
	}
	if string(forged.GetSignature()) != "sig" || forged.GetKeyId() != "kernel" {
		t.Error("the signature changed")
	}
	if _, err := forge(&receiptv1.Envelope{Payload: []byte{0xff}}); err == nil {
		t.Error("forged a payload that is no capability")
	}
}

// TestFormat: one row per result and a total.
func TestFormat(t *testing.T) {
	out := Format([]Result{
		{Family: Exfiltrate, Example: "a", Rounds: 1, Attempts: 3, Refused: 3, Legitimate: 1},
		{Family: Replay, Example: "b", Rounds: 1, Attempts: 2, Refused: 1, Unauthorised: 1, Legitimate: 1, Findings: []string{"unauthorised effect: x"}},
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "family") || !strings.HasPrefix(lines[1], "exfiltrate fields") || !strings.HasPrefix(lines[4], "total") {
		t.Errorf("table:\n%s", out)
	}
	if total := strings.Fields(lines[4]); strings.Join(total, " ") != "total 5 4 1 0 2 0" {
		t.Errorf("total row %q", lines[4])
	}
	if !strings.Contains(out, "replay a capability / b: unauthorised effect: x") {
		t.Errorf("findings missing:\n%s", out)
	}
}
