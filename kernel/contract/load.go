package contract

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/document"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Decode reads YAML or JSON into m strictly: a duplicate key (a second
// `subject: "*"` must not replace the first) and an unknown field are
// errors that name their line and key path.
func Decode(data []byte, m proto.Message) error {
	return document.DecodeProto(data, m)
}

// Parse decodes and validates a contract. name labels errors.
func Parse(name string, data []byte) (*contractv1.Contract, error) {
	c := &contractv1.Contract{}
	if err := Decode(data, c); err != nil {
		return nil, fmt.Errorf("load contract %s: %w", name, err)
	}
	// Compiling checks every schema and expression: a bad declaration is
	// a load error naming its place.
	if _, err := Compile(c); err != nil {
		return nil, fmt.Errorf("load contract %s: %w", name, err)
	}
	return c, nil
}

// Load reads, decodes and validates a contract file.
func Load(file string) (*contractv1.Contract, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load contract: %w", err)
	}
	return Parse(file, data)
}

// Proposal is an offline proposal: self-declared facts and, optionally, a
// call of a declared tool with the values the agent read of the record,
// from which the contract's declarations derive the destination, amount,
// irreversibility and failed constraints.
type Proposal struct {
	Facts *contractv1.Facts
	Call  *contractv1.ToolCall
	// Record holds the record's values the call's expressions read.
	Record map[string]any
}

// LoadProposal reads a proposal file: facts (the seed's form) plus the
// optional keys `call` ({tool, arguments_json}) and `record` (values).
func LoadProposal(file string) (*Proposal, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load proposal: %w", err)
	}
	doc, err := document.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load proposal %s: %w", file, err)
	}
	js := doc.JSON()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("load proposal %s: %w", file, err)
	}
	p := &Proposal{Facts: &contractv1.Facts{}}
	if raw, ok := top["call"]; ok {
		p.Call = &contractv1.ToolCall{}
		if err := (protojson.UnmarshalOptions{}).Unmarshal(raw, p.Call); err != nil {
			return nil, fmt.Errorf("load proposal %s: call: %w", file, err)
		}
		delete(top, "call")
	}
	if raw, ok := top["record"]; ok {
		v, err := toolcall.Decode(raw)
		rec, isObject := v.(map[string]any)
		if err != nil || !isObject {
			return nil, fmt.Errorf("load proposal %s: record must be an object of values: %v", file, err)
		}
		p.Record = toolcall.Native(rec).(map[string]any)
		delete(top, "record")
	}
	rest, _ := json.Marshal(top)
	if err := document.DecodeProto(rest, p.Facts); err != nil {
		return nil, fmt.Errorf("load proposal %s: %w", file, err)
	}
	if err := ValidateFacts(p.Facts); err != nil {
		return nil, fmt.Errorf("load proposal %s: %w", file, err)
	}
	return p, nil
}

// LoadFacts reads a proposal file: the seed's self-declared facts.
func LoadFacts(file string) (*contractv1.Facts, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load proposal: %w", err)
	}
	f := &contractv1.Facts{}
	if err := Decode(data, f); err != nil {
		return nil, fmt.Errorf("load proposal %s: %w", file, err)
	}
	if err := ValidateFacts(f); err != nil {
		return nil, fmt.Errorf("load proposal %s: %w", file, err)
	}
	return f, nil
}

//go:embed profiles/*.yaml
var profileFS embed.FS

// ProfileNames lists the shipped profiles in report order: the seed's
// from widest to narrowest, each widening the next (evidence-plus-action
// between action-only and coupled, the stricter coupled-strict after
// coupled), then irreversible-coupled, which adds to coupled-strict an
// irreversible tool granted under coupling rule 2 and so stands beside
// that chain rather than in it.
func ProfileNames() []string {
	return []string{"unrestricted", "action-only", "evidence-plus-action", "coupled", "coupled-strict", "irreversible-coupled"}
}

// Profile returns one shipped profile by name.
func Profile(name string) (*contractv1.Contract, error) {
	data, err := profileFS.ReadFile(path.Join("profiles", name+".yaml"))
	if err != nil {
		entries, _ := profileFS.ReadDir("profiles")
		var names []string
		for _, e := range entries {
			names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
		}
		sort.Strings(names)
		return nil, fmt.Errorf("profile %q not found (have %s)", name, strings.Join(names, ", "))
	}
	return Parse(name+".yaml", data)
}

// ProfileFile returns a shipped profile's bytes, e.g. to seed a fuzz corpus.
func ProfileFile(name string) ([]byte, error) {
	return profileFS.ReadFile(path.Join("profiles", name+".yaml"))
}
