package document

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Decode parses data with [Parse] and decodes it into v with
// [Document.Decode].
func Decode(data []byte, v any) error {
	d, err := Parse(data)
	if err != nil {
		return err
	}
	return d.Decode(v)
}

// DecodeProto parses data with [Parse] and decodes it into m with
// [Document.DecodeProto].
func DecodeProto(data []byte, m proto.Message) error {
	d, err := Parse(data)
	if err != nil {
		return err
	}
	return d.DecodeProto(m)
}

// Decode fills v, a pointer to a Go value whose struct fields carry json
// tags, as encoding/json would from [Document.JSON], after checking every
// key against the tags: a key that names no field (in exact case; a
// struct embedded without a JSON name contributes its fields) and a value
// of the wrong kind are errors that name their line. Every such problem is
// reported, joined. Values of types with their own UnmarshalJSON or
// UnmarshalText are checked by those methods.
func (d *Document) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode: want a non-nil pointer, got %T", v)
	}
	var errs []error
	if d.root != nil {
		checkGo(d.root, rv.Type().Elem(), "", &errs)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	dec := json.NewDecoder(bytes.NewReader(d.JSON()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func unmarshalsItself(t reflect.Type) bool {
	return t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
}

func checkGo(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	n = deref(n)
	if isNull(n) {
		return // JSON null leaves a Go value as it is.
	}
	for t.Kind() == reflect.Pointer {
		if unmarshalsItself(t) {
			return
		}
		t = t.Elem()
	}
	if unmarshalsItself(t) {
		return
	}
	want := func(what string) {
		*errs = append(*errs, &Error{Line: n.Line, Path: path, Msg: fmt.Sprintf("want %s, got %s", what, kindName(n))})
	}
	switch t.Kind() {
	case reflect.Interface:
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			want("a mapping")
			return
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			kp := join(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, &Error{Line: k.Line, Path: kp, Msg: "unknown key"})
				continue
			}
			checkGo(n.Content[i+1], ft, kp, errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			want("a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkGo(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!binary") {
				want("base64 text")
			}
			return
		}
		if n.Kind != yaml.SequenceNode {
			want("a list")
			return
		}
		for i, v := range n.Content {
			checkGo(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
			want("a string (quote the value)")
		}
	case reflect.Bool:
		if n.ShortTag() != "!!bool" {
			want("true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.ShortTag() != "!!int" {
			want("an integer")
		}
	case reflect.Float32, reflect.Float64:
		if n.ShortTag() != "!!int" && n.ShortTag() != "!!float" {
			want("a number")
		}
	}
}

// jsonFields maps the JSON names of t's fields to their types, the way
// encoding/json names them: the tag's name, else the field's name; an
// embedded struct without a JSON name contributes its own fields.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, shadowed := out[k]; !shadowed {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}

// DecodeProto fills m as protojson would from [Document.JSON], after
// checking every key against the message's fields (by JSON name or proto
// name): an unknown key, a field given twice under its two names and two
// members of one oneof are errors that name their line. Well-known types
// with a JSON form of their own (Timestamp, Struct, Any…) are left to
// protojson.
func (d *Document) DecodeProto(m proto.Message) error {
	var errs []error
	if d.root != nil {
		checkProto(d.root, m.ProtoReflect().Descriptor(), "", &errs)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(d.JSON(), m); err != nil {
		return fmt.Errorf("decode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return nil
}

// jsonSpecial are the well-known types whose JSON form is not an object of
// their fields; protojson checks them.
var jsonSpecial = map[protoreflect.FullName]bool{
	"google.protobuf.Any": true, "google.protobuf.Duration": true, "google.protobuf.Timestamp": true,
	"google.protobuf.FieldMask": true, "google.protobuf.Struct": true, "google.protobuf.Value": true,
	"google.protobuf.ListValue": true, "google.protobuf.BoolValue": true, "google.protobuf.BytesValue": true,
	"google.protobuf.DoubleValue": true, "google.protobuf.FloatValue": true, "google.protobuf.Int32Value": true,
	"google.protobuf.Int64Value": true, "google.protobuf.StringValue": true, "google.protobuf.UInt32Value": true,
	"google.protobuf.UInt64Value": true,
}

func checkProto(n *yaml.Node, md protoreflect.MessageDescriptor, path string, errs *[]error) {
	n = deref(n)
	if isNull(n) || jsonSpecial[md.FullName()] {
		return
	}
	if n.Kind != yaml.MappingNode {
		*errs = append(*errs, &Error{Line: n.Line, Path: path, Msg: fmt.Sprintf("want a mapping (%s), got %s", md.Name(), kindName(n))})
		return
	}
	fields := md.Fields()
	seen := map[protoreflect.FieldNumber]int{}
	oneofs := map[protoreflect.FullName]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		kp := join(path, k.Value)
		fd := fields.ByJSONName(k.Value)
		if fd == nil {
			fd = fields.ByTextName(k.Value)
		}
		if fd == nil {
			*errs = append(*errs, &Error{Line: k.Line, Path: kp, Msg: "unknown field"})
			continue
		}
		if line, dup := seen[fd.Number()]; dup {
			*errs = append(*errs, &Error{Line: k.Line, Path: kp, Msg: fmt.Sprintf("field %s given twice (first at line %d)", fd.Name(), line)})
			continue
		}
		seen[fd.Number()] = k.Line
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && !isNull(v) {
			if line, dup := oneofs[o.FullName()]; dup {
				*errs = append(*errs, &Error{Line: k.Line, Path: kp, Msg: fmt.Sprintf("only one field of %s may be set (another at line %d)", o.Name(), line)})
				continue
			}
			oneofs[o.FullName()] = k.Line
		}
		switch {
		case isNull(v):
		case fd.IsMap():
			if v.Kind != yaml.MappingNode {
				*errs = append(*errs, &Error{Line: v.Line, Path: kp, Msg: "want a mapping, got " + kindName(v)})
				continue
			}
			if mv := fd.MapValue(); mv.Kind() == protoreflect.MessageKind || mv.Kind() == protoreflect.GroupKind {
				for j := 0; j+1 < len(v.Content); j += 2 {
					checkProto(v.Content[j+1], mv.Message(), join(kp, v.Content[j].Value), errs)
				}
			}
		case fd.IsList():
			if v.Kind != yaml.SequenceNode {
				*errs = append(*errs, &Error{Line: v.Line, Path: kp, Msg: "want a list, got " + kindName(v)})
				continue
			}
			if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
				for j, e := range v.Content {
					checkProto(e, fd.Message(), fmt.Sprintf("%s[%d]", kp, j), errs)
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			checkProto(v, fd.Message(), kp, errs)
		}
	}
}
