package contract

import (
	"embed"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/document"
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
	if err := Validate(c); err != nil {
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

// ProfileNames lists the shipped profiles in the order the seed reports
// them, with evidence-plus-action between action-only and coupled.
func ProfileNames() []string {
	return []string{"unrestricted", "action-only", "evidence-plus-action", "coupled"}
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
