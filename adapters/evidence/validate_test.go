package evidence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/adapters/evidence"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
)

func TestValidateRead(t *testing.T) {
	many := make([]string, evidence.MaxFields+1)
	for i := range many {
		many[i] = fmt.Sprintf("f%d", i)
	}
	long := strings.Repeat("x", 257)
	req := func(edit func(*evidencev1.ReadRequest)) *evidencev1.ReadRequest {
		r := &evidencev1.ReadRequest{TaskId: "t", Source: "s", RecordKey: "k", Purpose: "p", Fields: []string{"a"}}
		edit(r)
		return r
	}
	tests := []struct {
		name string
		req  *evidencev1.ReadRequest
		want []string // substrings of the error; nil means valid
	}{
		{name: "valid", req: req(func(*evidencev1.ReadRequest) {})},
		{name: "max fields", req: req(func(r *evidencev1.ReadRequest) { r.Fields = many[:evidence.MaxFields] })},
		{name: "nil request", req: nil, want: []string{"task_id", "source", "record_key", "purpose", "fields"}},
		{name: "no task", req: req(func(r *evidencev1.ReadRequest) { r.TaskId = "" }), want: []string{"task_id is required"}},
		{name: "no purpose", req: req(func(r *evidencev1.ReadRequest) { r.Purpose = "" }), want: []string{"purpose is required"}},
		{name: "long key", req: req(func(r *evidencev1.ReadRequest) { r.RecordKey = long }), want: []string{"record_key is longer than 256 bytes"}},
		{name: "long source", req: req(func(r *evidencev1.ReadRequest) { r.Source = long[:129] }), want: []string{"source is longer than 128 bytes"}},
		{name: "no fields", req: req(func(r *evidencev1.ReadRequest) { r.Fields = nil }), want: []string{"at least one field"}},
		{name: "too many fields", req: req(func(r *evidencev1.ReadRequest) { r.Fields = many }), want: []string{"65 requested, at most 64"}},
		{name: "repeated field", req: req(func(r *evidencev1.ReadRequest) { r.Fields = []string{"a", "b", "a"} }), want: []string{`"a" is repeated`}},
		{name: "empty field", req: req(func(r *evidencev1.ReadRequest) { r.Fields = []string{"a", ""} }), want: []string{"fields[1] is empty"}},
		{name: "long field", req: req(func(r *evidencev1.ReadRequest) { r.Fields = []string{long} }), want: []string{"fields[0] is longer than 128 bytes"}},
		{name: "every problem is named", req: &evidencev1.ReadRequest{Fields: []string{"a", "a"}},
			want: []string{"task_id", "source", "record_key", "purpose", `"a" is repeated`}},
		{name: "problems are bounded", req: &evidencev1.ReadRequest{Fields: []string{"", "", "", "", "", ""}},
			want: []string{"and 2 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := evidence.ValidateRead(tt.req)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateRead = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, evidence.ErrInvalidRequest) {
				t.Fatalf("ValidateRead = %v, want ErrInvalidRequest", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
