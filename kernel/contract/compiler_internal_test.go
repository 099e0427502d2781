package contract

import (
	"fmt"
	"testing"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestCompilerBounded: a compiler keeps at most maxShared tools and
// derived fields however many distinct ones it compiles.
func TestCompilerBounded(t *testing.T) {
	cm := NewCompiler()
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxShared + 10 {
		g := &contractv1.ToolGrant{Name: fmt.Sprintf("tool%d", i), InputSchema: schema}
		if _, err := cm.tool("action.tools[0]", g); err != nil {
			t.Fatal(err)
		}
		if _, err := cm.derivedField(fmt.Sprintf("record.n == %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := cm.tools.Len(), cm.derived.Len(); n != maxShared || m != maxShared {
		t.Errorf("kept %d tools and %d derived fields, want %d of each", n, m, maxShared)
	}
}
