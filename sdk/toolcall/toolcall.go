package toolcall

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid marks arguments that are not one well-formed JSON object.
var ErrInvalid = errors.New("invalid arguments")

// Limits on a decoded argument tree; the wire already bounds the bytes.
const (
	maxDepth = 32
	maxNodes = 10000
)

// Call is a decoded tool call. Args holds string, bool, nil, json.Number,
// []any and map[string]any values.
type Call struct {
	Tool string
	Args map[string]any
	// canonical is the arguments' canonical JSON.
	canonical string
}

// Parse decodes a call's arguments strictly: one JSON object with no
// duplicate keys at any depth and nothing after it.
func Parse(tool, argumentsJSON string) (*Call, error) {
	if tool == "" {
		return nil, fmt.Errorf("%w: no tool named", ErrInvalid)
	}
	v, err := Decode([]byte(argumentsJSON))
	if err != nil {
		return nil, err
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalid)
	}
	return &Call{Tool: tool, Args: args, canonical: string(Canonical(args))}, nil
}

// Decode reads one JSON value strictly (see [Parse]); numbers are
// json.Number.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	nodes := 0
	v, err := decodeValue(dec, 0, &nodes, "")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the JSON value", ErrInvalid)
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int, nodes *int, path string) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d at %s", ErrInvalid, maxDepth, pathOr(path))
	}
	if *nodes++; *nodes > maxNodes {
		return nil, fmt.Errorf("%w: more than %d values", ErrInvalid, maxNodes)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
				}
				key := kt.(string) // the decoder only yields string keys here
				child := path + "." + key
				if _, dup := obj[key]; dup {
					return nil, fmt.Errorf("%w: duplicate key %s", ErrInvalid, strings.TrimPrefix(child, "."))
				}
				v, err := decodeValue(dec, depth+1, nodes, child)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				v, err := decodeValue(dec, depth+1, nodes, fmt.Sprintf("%s[%d]", path, i))
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("%w: unexpected %v at %s", ErrInvalid, t, pathOr(path))
	default:
		return t, nil // string, bool, nil or json.Number
	}
}

func pathOr(p string) string {
	if p == "" {
		return "the top"
	}
	return strings.TrimPrefix(p, ".")
}

// Canonical is the canonical JSON of a decoded value: object keys sorted,
// no insignificant space, numbers exactly as written.
func Canonical(v any) []byte {
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.Bytes()
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, t[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(t.String())
	case string:
		writeString(b, t)
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	default:
		// Values built in Go rather than decoded: encode them plainly.
		enc, _ := json.Marshal(t)
		b.Write(enc)
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode ends with a newline
}

// Canonical is the call's arguments in canonical form: what a capability
// binds and an executor performs.
func (c *Call) Canonical() string { return c.canonical }

// Hash identifies the call: SHA-256 over the tool name and the canonical
// arguments, hex.
func (c *Call) Hash() string {
	h := sha256.New()
	h.Write([]byte(c.Tool))
	h.Write([]byte{0})
	h.Write([]byte(c.canonical))
	return hex.EncodeToString(h.Sum(nil))
}

// Lookup returns the value at a dotted argument path, e.g. "amount" or
// "amount.currency_code".
func (c *Call) Lookup(path string) (any, bool) {
	var v any = c.Args
	for _, part := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// String returns a string argument.
func (c *Call) String(path string) (string, bool) {
	v, ok := c.Lookup(path)
	s, isString := v.(string)
	return s, ok && isString
}

// Money is an amount read from a call.
type Money struct {
	Currency string
	Minor    int64
}

// Money reads the Money argument at path: an object with exactly
// "currency_code" (string) and "minor_units" (an integer written without
// fraction or exponent). A missing argument is (Money{}, false, nil).
func (c *Call) Money(path string) (Money, bool, error) {
	v, ok := c.Lookup(path)
	if !ok {
		return Money{}, false, nil
	}
	obj, ok := v.(map[string]any)
	if !ok || len(obj) != 2 {
		return Money{}, true, fmt.Errorf("%w: %s must be {\"currency_code\", \"minor_units\"}", ErrInvalid, path)
	}
	code, ok := obj["currency_code"].(string)
	if !ok {
		return Money{}, true, fmt.Errorf("%w: %s.currency_code must be a string", ErrInvalid, path)
	}
	n, ok := obj["minor_units"].(json.Number)
	if !ok {
		return Money{}, true, fmt.Errorf("%w: %s.minor_units must be a number", ErrInvalid, path)
	}
	minor, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return Money{}, true, fmt.Errorf("%w: %s.minor_units must be an integer of minor units, got %s", ErrInvalid, path, n)
	}
	return Money{Currency: code, Minor: minor}, true, nil
}

// Native returns v with every json.Number turned into an int64 (an integer
// literal that fits), a uint64 (one that fits only unsigned) or a float64,
// as expression evaluation takes them. Maps and lists are copied.
func Native(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = Native(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Native(e)
		}
		return out
	case json.Number:
		s := t.String()
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) {
			return f
		}
		// Beyond float64's range: keep the exact text rather than invent a value.
		if r, ok := new(big.Float).SetString(s); ok {
			return r.String()
		}
		return s
	}
	return v
}
