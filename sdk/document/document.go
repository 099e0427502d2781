package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem at one place in a document.
type Error struct {
	// Line is 1-based; 0 when the value did not come from the text (it
	// was set with [Document.Set]) or the place is unknown.
	Line int
	// Path is the key path, e.g. "sources.records_db.sql.table" or
	// "items[2].name"; empty for the document itself.
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Limits of a document. An alias expands to a copy of what it names, so a
// few lines can describe an enormous value ("billion laughs"); the
// expanded size is bounded.
const (
	maxNodes = 100_000
	maxDepth = 64
)

// Document is a parsed YAML or JSON document whose keys are known to be
// unique strings.
type Document struct {
	// root is the top-level value; nil for an empty document.
	root *yaml.Node
}

// Parse parses data as one YAML (or JSON) document and checks it: no
// duplicate keys, no merge keys, only string-like keys, no custom tags, no
// second document, finite numbers, and a bounded size once aliases are
// expanded. An empty input is an empty document (null).
func Parse(data []byte) (*Document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Document{}, nil
		}
		return nil, &Error{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, &Error{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	default:
		return nil, &Error{Line: extra.Line, Msg: "a second document: one document per input"}
	}
	if len(doc.Content) == 0 {
		return &Document{}, nil
	}
	c := checker{sizes: map[*yaml.Node]int{}}
	root := doc.Content[0]
	if _, err := c.check(root, "", 0); err != nil {
		return nil, err
	}
	return &Document{root: root}, nil
}

type checker struct {
	// sizes memoises the expanded size of anchored nodes, so that checking
	// many aliases of one anchor costs one walk.
	sizes map[*yaml.Node]int
	total int
}

// check validates n and returns its expanded size in nodes.
func (c *checker) check(n *yaml.Node, path string, depth int) (int, error) {
	if depth > maxDepth {
		return 0, &Error{Line: n.Line, Path: path, Msg: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	if n.Kind == yaml.AliasNode {
		size, ok := c.sizes[n.Alias]
		if !ok {
			// An alias always follows its anchor, which was checked
			// where it stands; reaching here means a malformed tree.
			return 0, &Error{Line: n.Line, Path: path, Msg: "alias to an unknown anchor"}
		}
		c.total += size
		if c.total > maxNodes {
			return 0, &Error{Line: n.Line, Path: path, Msg: fmt.Sprintf("more than %d values once aliases are expanded", maxNodes)}
		}
		return size, nil
	}
	size := 1
	c.total++
	switch n.Kind {
	case yaml.MappingNode:
		first := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key, err := keyOf(k, path)
			if err != nil {
				return 0, err
			}
			kp := join(path, key)
			if line, dup := first[key]; dup {
				return 0, &Error{Line: k.Line, Path: kp, Msg: fmt.Sprintf("duplicate key (first at line %d)", line)}
			}
			first[key] = k.Line
			s, err := c.check(v, kp, depth+1)
			if err != nil {
				return 0, err
			}
			size += s
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			s, err := c.check(v, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return 0, err
			}
			size += s
		}
	case yaml.ScalarNode:
		if _, err := scalarJSON(n); err != nil {
			return 0, &Error{Line: n.Line, Path: path, Msg: err.Error()}
		}
	default:
		return 0, &Error{Line: n.Line, Path: path, Msg: "unexpected YAML node"}
	}
	if n.Anchor != "" {
		c.sizes[n] = size
	}
	if c.total > maxNodes {
		return 0, &Error{Line: n.Line, Path: path, Msg: fmt.Sprintf("more than %d values", maxNodes)}
	}
	return size, nil
}

// keyOf returns a mapping key as the string JSON would use.
func keyOf(k *yaml.Node, path string) (string, error) {
	if k.Kind != yaml.ScalarNode {
		return "", &Error{Line: k.Line, Path: path, Msg: "a key must be a string"}
	}
	switch k.ShortTag() {
	case "!!merge":
		return "", &Error{Line: k.Line, Path: path, Msg: "merge keys (<<) are not supported; repeat the keys or use an alias as the whole value"}
	case "!!null":
		return "", &Error{Line: k.Line, Path: path, Msg: "a key must not be null"}
	case "!!str", "!!int", "!!bool", "!!float":
		return k.Value, nil
	default:
		return "", &Error{Line: k.Line, Path: path, Msg: fmt.Sprintf("a key must be a string, not %s", k.ShortTag())}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// scalarJSON returns the JSON text of a scalar.
func scalarJSON(n *yaml.Node) ([]byte, error) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return []byte("null"), nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("%q is not a boolean", n.Value)
		}
		return strconv.AppendBool(nil, b), nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return strconv.AppendInt(nil, i, 10), nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return strconv.AppendUint(nil, u, 10), nil
		}
		return nil, fmt.Errorf("integer %s is out of range", n.Value)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("%q is not a number", n.Value)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%s is not a finite number", n.Value)
		}
		return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
	case "!!str", "!!timestamp", "!!binary":
		return json.Marshal(n.Value)
	default:
		return nil, fmt.Errorf("tag %s is not supported", tag)
	}
}

// JSON returns the document as JSON, with aliases expanded and keys in
// document order.
func (d *Document) JSON() []byte {
	var b bytes.Buffer
	writeJSON(&b, d.root)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, n *yaml.Node) {
	if n == nil {
		b.WriteString("null")
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		writeJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(n.Content[i].Value)
			b.Write(key)
			b.WriteByte(':')
			writeJSON(b, n.Content[i+1])
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, v := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, v)
		}
		b.WriteByte(']')
	default:
		// Parse and Set checked every scalar.
		js, _ := scalarJSON(n)
		b.Write(js)
	}
}

// Set replaces the value at the key path keys, adding the keys that are
// missing. The value is YAML text (so "true", "5s" and "[a, b]" keep their
// types) unless literal is set, in which case it is a string as it stands.
// A key along the path whose value is not a mapping is replaced by one.
func (d *Document) Set(keys []string, value string, literal bool) error {
	if len(keys) == 0 {
		return errors.New("set: no key")
	}
	path := strings.Join(keys, ".")
	var v *yaml.Node
	if literal {
		v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	} else {
		parsed, err := Parse([]byte(value))
		if err != nil {
			var de *Error
			if errors.As(err, &de) {
				return &Error{Path: path, Msg: de.Msg}
			}
			return err
		}
		v = parsed.root
		if v == nil {
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		}
		clearLines(v)
	}
	if d.root == nil || d.root.Kind != yaml.MappingNode {
		if d.root != nil && !isNull(d.root) {
			return &Error{Line: d.root.Line, Msg: "the document is not a mapping"}
		}
		d.root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	cur := d.root
	for i, key := range keys {
		last := i == len(keys)-1
		idx := -1
		for j := 0; j+1 < len(cur.Content); j += 2 {
			if cur.Content[j].Value == key {
				idx = j + 1
				break
			}
		}
		if idx < 0 {
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
			cur.Content = append(cur.Content, k, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
			idx = len(cur.Content) - 1
		}
		if last {
			cur.Content[idx] = v
			return nil
		}
		next := cur.Content[idx]
		if next.Kind != yaml.MappingNode {
			// An alias is replaced rather than followed: changing the
			// anchored value would change every other place it appears.
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if m := deref(cur.Content[idx]); m.Kind == yaml.MappingNode {
				next = deepCopy(m)
			}
			cur.Content[idx] = next
		}
		cur = next
	}
	return nil
}

// deepCopy copies n with aliases expanded, so that changing the copy
// never changes an anchored value shared with other places.
func deepCopy(n *yaml.Node) *yaml.Node {
	n = deref(n)
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, v := range n.Content {
		c.Content[i] = deepCopy(v)
	}
	return &c
}

func clearLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		clearLines(c)
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// kindName describes a node for an error message.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	}
	return n.ShortTag()
}
