package document_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/sourcecontextpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/typepb"

	"github.com/ambitkernel/ambit/sdk/document"
)

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the whole error text
	}{
		{"duplicate top-level key", "subject: alice\npurpose: p\nsubject: \"*\"\n", `line 3: subject: duplicate key (first at line 1)`},
		{"duplicate nested key", "binding:\n  subject: alice\n  subject: \"*\"\n", `line 3: binding.subject: duplicate key (first at line 2)`},
		{"duplicate in a list item", "items:\n  - name: a\n  - name: b\n    name: c\n", `line 4: items[1].name: duplicate key (first at line 3)`},
		{"duplicate JSON key", `{"binding": {"subject": "alice", "subject": "*"}}`, `line 1: binding.subject: duplicate key (first at line 1)`},
		{"duplicate key spelt as a number", "1: a\n\"1\": b\n", `line 2: 1: duplicate key (first at line 1)`},
		{"merge key", "base: &b {x: 1}\nother:\n  <<: *b\n", `line 3: other: merge keys (<<) are not supported; repeat the keys or use an alias as the whole value`},
		{"mapping as key", "? {a: 1}\n: x\n", `line 1: a key must be a string`},
		{"null key", "~: x\n", `line 1: a key must not be null`},
		{"second document", "a: 1\n---\nb: 2\n", `line 2: a second document: one document per input`},
		{"custom tag", "a: !secret x\n", `line 1: a: tag !secret is not supported`},
		{"infinite number", "a: .inf\n", `line 1: a: .inf is not a finite number`},
		{"syntax error", "a: [1, 2\n", `line 1: did not find expected ',' or ']'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := document.Parse([]byte(tt.in))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if got := err.Error(); !strings.HasSuffix(got, tt.want) && got != tt.want {
				t.Errorf("Parse error\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestAliasBomb(t *testing.T) {
	// Each level doubles the expanded size: 2^30 values from 30 lines.
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x]\n")
	for i := 1; i <= 30; i++ {
		n, prev := strconv.Itoa(i), strconv.Itoa(i-1)
		b.WriteString("l" + n + ": &l" + n + " [*l" + prev + ", *l" + prev + "]\n")
	}
	_, err := document.Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases are expanded") {
		t.Fatalf("Parse = %v, want the expansion bound", err)
	}
}

func TestJSON(t *testing.T) {
	in := `
name: "x"
count: 0x10
ratio: 1.5
on: true
nothing: ~
when: 2026-01-02
list: &l [a, 1]
again: *l
`
	d, err := document.Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"x","count":16,"ratio":1.5,"on":true,"nothing":null,"when":"2026-01-02","list":["a",1],"again":["a",1]}`
	if got := string(d.JSON()); got != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
	empty, err := document.Parse(nil)
	if err != nil || string(empty.JSON()) != "null" {
		t.Errorf("empty document: %v, %s", err, empty.JSON())
	}
}

type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	v, err := time.ParseDuration(strings.Trim(string(b), `"`))
	*d = duration(v)
	return err
}

type shared struct {
	Identity string `json:"identity"`
	Verbose  bool   `json:"verbose"`
}

type source struct {
	Kind  string   `json:"kind"`
	Ports []int    `json:"ports"`
	Tags  []string `json:"tags"`
}

type appConfig struct {
	shared  `json:",inline"`
	Grace   duration          `json:"grace"`
	Sources map[string]source `json:"sources"`
	Ratio   float64           `json:"ratio"`
	Nested  *struct {
		Addr string `json:"addr"`
	} `json:"nested"`
	Any    any    `json:"any"`
	Hidden string `json:"-"`
}

func TestDecode(t *testing.T) {
	in := `
identity: x
verbose: true
grace: 5s
sources:
  a: {kind: claims, ports: [1, 2], tags: [t]}
ratio: 2
nested: {addr: "127.0.0.1:1"}
any: {whatever: [1]}
`
	var got appConfig
	if err := document.Decode([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	if got.Identity != "x" || !got.Verbose || got.Grace != duration(5*time.Second) || got.Sources["a"].Ports[1] != 2 ||
		got.Ratio != 2 || got.Nested.Addr != "127.0.0.1:1" || got.Any == nil {
		t.Errorf("Decode = %+v", got)
	}
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // each a whole line of the error text
	}{
		{"unknown key", "identity: x\nverbos: true\n", []string{"line 2: verbos: unknown key"}},
		{"wrong case", "Identity: x\n", []string{"line 1: Identity: unknown key"}},
		{"unknown nested key", "sources:\n  a:\n    kind: claims\n    knd: x\n", []string{"line 4: sources.a.knd: unknown key"}},
		{"every problem at once", "identity: 7\nverbose: yes\nsources: [a]\nratio: x\nextra: 1\n", []string{
			"line 1: identity: want a string (quote the value), got an integer",
			"line 2: verbose: want true or false, got a string",
			"line 3: sources: want a mapping, got a list",
			"line 4: ratio: want a number, got a string",
			"line 5: extra: unknown key",
		}},
		{"list item of the wrong kind", "sources:\n  a: {ports: [1, two]}\n", []string{"line 2: sources.a.ports[1]: want an integer, got a string"}},
		{"ignored field is unknown", "Hidden: x\n", []string{"line 1: Hidden: unknown key"}},
		{"own unmarshaler still checks", "grace: soon\n", []string{`decode: time: invalid duration "soon"`}},
		{"duplicate", "identity: a\nidentity: b\n", []string{"line 2: identity: duplicate key (first at line 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c appConfig
			err := document.Decode([]byte(tt.in), &c)
			if err == nil {
				t.Fatal("Decode succeeded")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
	if err := document.Decode([]byte("a: 1"), appConfig{}); err == nil {
		t.Error("Decode into a non-pointer succeeded")
	}
}

func TestSet(t *testing.T) {
	d, err := document.Parse([]byte("identity: x\nsources:\n  b: &b {kind: claims}\n  a: *b\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		keys    []string
		value   string
		literal bool
	}{
		{[]string{"identity"}, "0123", true},
		{[]string{"verbose"}, "true", false},
		{[]string{"sources", "a", "tags"}, "[x, y]", false},
		{[]string{"nested", "addr"}, "127.0.0.1:9", true},
	} {
		if err := d.Set(s.keys, s.value, s.literal); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"identity":"0123","sources":{"b":{"kind":"claims"},"a":{"kind":"claims","tags":["x","y"]}},"verbose":true,"nested":{"addr":"127.0.0.1:9"}}`
	if got := string(d.JSON()); got != want {
		t.Errorf("after Set\n got %s\nwant %s", got, want)
	}
	var c appConfig
	if err := d.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := d.Set([]string{"verbose"}, "yes", false); err != nil {
		t.Fatal(err)
	}
	// A value set from outside the text has no line, but its path.
	if err := d.Decode(&c); err == nil || err.Error() != "verbose: want true or false, got a string" {
		t.Errorf("Decode after a bad Set = %v", err)
	}
	if err := d.Set([]string{"x"}, "[1,", false); err == nil || !strings.HasPrefix(err.Error(), "x: ") {
		t.Errorf("Set with bad YAML = %v, want an error naming the key", err)
	}
	empty, _ := document.Parse(nil)
	if err := empty.Set([]string{"identity"}, "y", true); err != nil || string(empty.JSON()) != `{"identity":"y"}` {
		t.Errorf("Set on an empty document: %v, %s", err, empty.JSON())
	}
	list, _ := document.Parse([]byte("[1]"))
	if err := list.Set([]string{"a"}, "1", false); err == nil {
		t.Error("Set on a list succeeded")
	}
}

// TestDecodeProto uses messages of protobuf's own module, so that the
// package's tests need no generated code of Ambit's.
func TestDecodeProto(t *testing.T) {
	in := `
name: T
fields:
  - name: a
    number: 1
    json_name: aa
source_context: {file_name: f.proto}
`
	var got typepb.Type
	if err := document.DecodeProto([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := &typepb.Type{Name: "T", Fields: []*typepb.Field{{Name: "a", Number: 1, JsonName: "aa"}},
		SourceContext: &sourcecontextpb.SourceContext{FileName: "f.proto"}}
	if diff := cmp.Diff(want, &got, protocmp.Transform()); diff != "" {
		t.Errorf("DecodeProto (-want +got):\n%s", diff)
	}
	// protojson's own checks still apply; its messages are its own.
	if err := document.DecodeProto([]byte("syntax: SYNTAX_NONE\n"), &got); err == nil || !strings.Contains(err.Error(), "SYNTAX_NONE") {
		t.Errorf("bad enum name: %v", err)
	}
	var v structpb.Value
	if err := document.DecodeProto([]byte("{a: [1, true]}"), &v); err != nil {
		t.Errorf("well-known type: %v", err)
	}
}

func TestDecodeProtoRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"unknown field", "name: T\nnmae: U\n", []string{"line 2: nmae: unknown field"}},
		{"both names of one field", "fields:\n  - json_name: a\n    jsonName: b\n", []string{"line 3: fields[0].jsonName: field json_name given twice (first at line 2)"}},
		{"duplicate key", "name: T\nname: \"*\"\n", []string{"line 2: name: duplicate key (first at line 1)"}},
		{"list expected", "fields: {name: a}\n", []string{"line 1: fields: want a list, got a mapping"}},
		{"nested unknown", "fields:\n  - name: a\n    colour: red\n", []string{"line 3: fields[0].colour: unknown field"}},
		{"message expected", "source_context: f.proto\n", []string{"line 1: source_context: want a mapping (SourceContext), got a string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m typepb.Type
			err := document.DecodeProto([]byte(tt.in), &m)
			if err == nil {
				t.Fatal("DecodeProto succeeded")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
			var de *document.Error
			if strings.HasPrefix(tt.want[0], "line") && !errors.As(err, &de) {
				t.Errorf("error %v is not a *document.Error", err)
			}
		})
	}
}
