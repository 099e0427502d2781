package derive_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/derive"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

type corpusCase struct {
	Name       string            `json:"name"`
	Contract   string            `json:"contract"`
	InlineTool json.RawMessage   `json:"inline_tool"`
	Now        string            `json:"now"`
	Call       json.RawMessage   `json:"call"`
	Evidence   []json.RawMessage `json:"evidence"`
	Versions   map[string]string `json:"versions"`
	Usage      derive.Usage      `json:"usage"`
	Approved   bool              `json:"approved"`
}

// corpus reads the derivation corpus.
func corpus(t *testing.T) []corpusCase {
	t.Helper()
	data, err := os.ReadFile("testdata/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(js, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestCorpus derives the facts of every case and compares them with the
// golden file: the derivation rules as data.
func TestCorpus(t *testing.T) {
	cases := corpus(t)
	got := map[string]json.RawMessage{}
	for _, c := range cases {
		facts := derived(t, c)
		out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(contract.FactsProto(&facts))
		if err != nil {
			t.Fatal(err)
		}
		// Reformat through encoding/json: protojson's spacing is unstable.
		var v any
		_ = json.Unmarshal(out, &v)
		got[c.Name], _ = json.Marshal(v)
	}
	pretty, _ := json.MarshalIndent(got, "", "  ")
	const golden = "testdata/cases.golden.json"
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, append(pretty, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if diff := cmp.Diff(string(want), string(pretty)+"\n"); diff != "" {
		t.Errorf("derived facts (-want +got):\n%s", diff)
	}
}

func derived(t *testing.T, c corpusCase) evaluate.Facts {
	t.Helper()
	return derive.Facts(input(t, c))
}

// input is what a corpus case derives its facts from.
func input(t *testing.T, c corpusCase) *derive.Input {
	t.Helper()
	var proto *contractv1.Contract
	var err error
	switch c.Contract {
	case "inline":
		proto, err = contract.Profile("coupled-strict")
		if err != nil {
			t.Fatal(err)
		}
		var tool contractv1.ToolGrant
		if err := protojson.Unmarshal(c.InlineTool, &tool); err != nil {
			t.Fatalf("%s: inline tool: %v", c.Name, err)
		}
		proto.Action.Tools = []*contractv1.ToolGrant{&tool}
		proto.Action.AllowIrreversible = true
	default:
		if proto, err = contract.Profile(c.Contract); err != nil {
			t.Fatal(err)
		}
	}
	proto.Binding.Record = &contractv1.RecordRef{Source: "claims_db", Key: "C-1001"}
	compiled, err := contract.Compile(proto)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	var wire struct {
		Tool      string `json:"tool"`
		Arguments string `json:"arguments"`
	}
	if err := json.Unmarshal(c.Call, &wire); err != nil {
		t.Fatal(err)
	}
	call, err := toolcall.Parse(wire.Tool, wire.Arguments)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	plan, err := derive.PlanCall(compiled, call)
	if err != nil {
		t.Fatalf("%s: plan: %v", c.Name, err)
	}
	var evidence []*receiptv1.EvidenceReceipt
	for _, e := range c.Evidence {
		r := &receiptv1.EvidenceReceipt{}
		if err := protojson.Unmarshal(e, r); err != nil {
			t.Fatalf("%s: evidence: %v", c.Name, err)
		}
		evidence = append(evidence, r)
	}
	now := time.Date(2030, 1, 1, 0, 10, 0, 0, time.UTC)
	if c.Now != "" {
		if now, err = time.Parse(time.RFC3339Nano, c.Now); err != nil {
			t.Fatal(err)
		}
	}
	return &derive.Input{
		Contract: compiled, TaskID: "task-1", Purpose: "expense-refund", Call: call, Plan: plan,
		Evidence: evidence, Versions: c.Versions, Usage: c.Usage, Approved: c.Approved, Now: now,
	}
}

// TestWithUsage: the facts of every corpus case with other usage are
// those derived again with it, and only a tool whose expressions read
// usage needs them derived again.
func TestWithUsage(t *testing.T) {
	cases := corpus(t)
	reading := 0
	for _, c := range cases {
		in := input(t, c)
		facts := derive.Facts(in)
		for _, u := range []derive.Usage{{}, {Count: 1}, {Count: 3, Minor: 250}, {Minor: 9600}} {
			got, ok := derive.WithUsage(facts, in.Plan, u)
			again := *in
			again.Usage = u
			want := derive.Facts(&again)
			if !ok {
				if in.Plan.Tool == nil || !in.Plan.Tool.ReadsUsage() {
					t.Errorf("%s: WithUsage refused a tool that reads no usage", c.Name)
				}
				continue
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s, usage %+v (-derived again +WithUsage):\n%s", c.Name, u, diff)
			}
		}
		if in.Plan.Tool != nil && in.Plan.Tool.ReadsUsage() {
			reading++
			if _, ok := derive.WithUsage(facts, in.Plan, derive.Usage{Count: 1}); ok {
				t.Errorf("%s: WithUsage answered for a tool that reads usage", c.Name)
			}
		}
	}
	if reading == 0 {
		t.Error("no corpus case has a tool that reads usage")
	}
}

// TestOnlyWhatIsRead: a tool's expressions, given only the variables
// and keys they read, derive in every corpus case what they derive given
// every variable whole.
func TestOnlyWhatIsRead(t *testing.T) {
	picked := 0
	for _, c := range corpus(t) {
		in := input(t, c)
		if in.Plan.Tool == nil {
			continue
		}
		got := derive.Facts(in)
		whole := *in.Plan.Tool
		whole.Reads = map[string]contract.Read{}
		for _, v := range expr.Tool.Maps {
			whole.Reads[v] = contract.Read{Whole: true}
		}
		all := *in
		all.Plan.Tool = &whole
		if diff := cmp.Diff(derive.Facts(&all), got); diff != "" {
			t.Errorf("%s (-every variable whole +only what is read):\n%s", c.Name, diff)
		}
		if len(in.Plan.Tool.Reads) < len(expr.Tool.Maps) {
			picked++
		}
	}
	if picked == 0 {
		t.Error("no corpus case has a tool that reads less than every variable whole")
	}
}

// TestPlanRefusals: arguments that do not fit the tool are an error before
// anything is gathered.
func TestPlanRefusals(t *testing.T) {
	proto, err := contract.Profile("coupled-strict")
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := contract.Compile(proto)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"claim_id":"C-1001","payee_id":"employee-7"}`,
		`{"claim_id":"","amount":{"currency_code":"GBP","minor_units":1},"payee_id":"employee-7"}`,
		`{"claim_id":"C-1001","amount":{"currency_code":"XXX","minor_units":1},"payee_id":"employee-7"}`,
		`{"claim_id":"C-1001","amount":{"currency_code":"GBP","minor_units":1},"payee_id":"employee-7","extra":1}`,
	} {
		call, err := toolcall.Parse("refund", args)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := derive.PlanCall(compiled, call); err == nil {
			t.Errorf("PlanCall(%s) accepted it", args)
		}
	}
}
