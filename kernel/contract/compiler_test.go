package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
)

// withDerived is the valid contract with a derived field on its source.
var withDerived = strings.Replace(valid, "sources: [{name: claims_db, provenance: PROVENANCE_TRUSTED}]",
	`sources: [{name: claims_db, provenance: PROVENANCE_TRUSTED, derived: [{name: small, expression: "record.total < 100"}]}]`, 1)

// TestCompilerShares: two contracts that differ only in their binding
// share their tool and their derived field, compiled once, and each
// compiles to what Compile makes of it alone.
func TestCompilerShares(t *testing.T) {
	cm := contract.NewCompiler()
	var got []*contract.Compiled
	for _, task := range []string{"t1", "t2"} {
		c, err := contract.Parse("c.yaml", []byte(strings.Replace(withDerived, "task_id: t1", "task_id: "+task, 1)))
		if err != nil {
			t.Fatal(err)
		}
		shared, err := cm.Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		alone, err := contract.Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(alone.Eval, shared.Eval); diff != "" {
			t.Errorf("task %s: the shared compile's evaluator form differs (-alone +shared):\n%s", task, diff)
		}
		if shared.Proto.GetBinding().GetTaskId() != task || shared.Proto != c {
			t.Errorf("task %s: compiled as task %q", task, shared.Proto.GetBinding().GetTaskId())
		}
		if alone.Tools["refund"] == shared.Tools["refund"] {
			t.Error("Compile shared a tool with a compiler's")
		}
		got = append(got, shared)
	}
	if got[0].Tools["refund"] != got[1].Tools["refund"] {
		t.Error("the same tool grant compiled twice")
	}
	if got[0].Derived["claims_db"]["small"] != got[1].Derived["claims_db"]["small"] {
		t.Error("the same derived field compiled twice")
	}
	// A shared tool checks calls as its own would.
	refund := got[1].Tools["refund"]
	call, err := toolcall.Parse("refund", `{"claim_id":"C-1","amount":{"currency_code":"GBP","minor_units":1},"payee_id":"p","memo":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := refund.Check(call); !errors.Is(err, contract.ErrArguments) || !strings.Contains(err.Error(), `tool "refund" declares no argument memo`) {
		t.Errorf("Check = %v, want the undeclared argument named", err)
	}
}

// TestCompilerChecksEachContract: a tool compiled for one contract is not
// taken for another whose sources do not include the tool's record
// source, and a declaration that failed is refused every time.
func TestCompilerChecksEachContract(t *testing.T) {
	cm := contract.NewCompiler()
	ok, err := contract.Parse("c.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Compile(ok); err != nil {
		t.Fatal(err)
	}
	// The same tool grant, in a contract that reads another source.
	other := proto.CloneOf(ok)
	other.Evidence.Sources[0].Name = "other_db"
	for _, compile := range []func() (*contract.Compiled, error){
		func() (*contract.Compiled, error) { return cm.Compile(other) },
		func() (*contract.Compiled, error) { return contract.Compile(other) },
	} {
		if _, err := compile(); err == nil || !strings.Contains(err.Error(), `action.tools[0].record.source: tool "refund": source "claims_db" is not granted`) {
			t.Errorf("compile = %v, want the record's source refused", err)
		}
	}
	bad := proto.CloneOf(ok)
	bad.Action.Tools[0].Destinations[0].When = "args.payee_id =="
	for range 2 {
		if _, err := cm.Compile(bad); err == nil || !strings.Contains(err.Error(), `destinations[0].when`) {
			t.Errorf("compile = %v, want the destination's expression refused", err)
		}
	}
}
