package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// maxExactInt is the largest integer magnitude a JSON number (a double)
// holds exactly. A larger integer is refused rather than rounded: a
// released value is exactly the stored one or nothing.
const maxExactInt = 1 << 53

// toValue converts a value a connector read, or a derived value, to the
// protobuf JSON value the agent receives. Its errors say what the value is
// like, never what it is: they reach the log.
func toValue(v any) (*structpb.Value, error) {
	switch t := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case bool:
		return structpb.NewBoolValue(t), nil
	case string:
		if !utf8.ValidString(t) {
			return nil, errors.New("text that is not valid UTF-8")
		}
		return structpb.NewStringValue(t), nil
	case int64:
		if t > maxExactInt || t < -maxExactInt {
			return nil, errors.New("an integer beyond the exact range of a JSON number")
		}
		return structpb.NewNumberValue(float64(t)), nil
	case uint64:
		if t > maxExactInt {
			return nil, errors.New("an integer beyond the exact range of a JSON number")
		}
		return structpb.NewNumberValue(float64(t)), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, errors.New("a number without a JSON form")
		}
		return structpb.NewNumberValue(t), nil
	case []any:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(t))}
		for i, e := range t {
			ev, err := toValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l.Values[i] = ev
		}
		return structpb.NewListValue(l), nil
	case map[string]any:
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(t))}
		for k, e := range t {
			ev, err := toValue(e)
			if err != nil {
				return nil, fmt.Errorf(".%s: %w", k, err)
			}
			s.Fields[k] = ev
		}
		return structpb.NewStructValue(s), nil
	}
	// An SQL BLOB, above all: no JSON form the agent could read as stored.
	return nil, fmt.Errorf("a %T value cannot be released", v)
}

// quarantined is the form of a quarantined value: text as it is, null as
// null (there is no text), anything else as its canonical JSON text, so
// that a quarantined field is only ever text.
func quarantined(v *structpb.Value) *structpb.Value {
	switch v.GetKind().(type) {
	case *structpb.Value_StringValue, *structpb.Value_NullValue:
		return v
	}
	return structpb.NewStringValue(string(toolcall.Canonical(v.AsInterface())))
}

// ContentHash is an evidence receipt's content_hash: the hex SHA-256 of
// the canonical JSON (toolcall.Canonical: keys sorted, no insignificant
// space) of the released values, exactly as the agent receives them.
// Anyone holding the values can recompute it.
func ContentHash(values *structpb.Struct) string {
	sum := sha256.Sum256(toolcall.Canonical(values.AsMap()))
	return hex.EncodeToString(sum[:])
}
