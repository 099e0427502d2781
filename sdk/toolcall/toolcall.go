package toolcall

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
// json.Number. It reads the bytes once, without the token decoder's
// allocations; a string with escapes or non-ASCII bytes is unquoted by
// encoding/json, so strings mean exactly what they do there.
func Decode(data []byte) (any, error) {
	d := decoder{data: data}
	v, err := d.value(0, "")
	if err != nil {
		return nil, err
	}
	if d.space(); d.i < len(d.data) {
		return nil, fmt.Errorf("%w: data after the JSON value", ErrInvalid)
	}
	return v, nil
}

// decoder is a strict reader of one JSON value.
type decoder struct {
	data  []byte
	i     int
	nodes int
}

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) syntax(what string) error {
	if d.i >= len(d.data) {
		return fmt.Errorf("%w: unexpected end of JSON input", ErrInvalid)
	}
	return fmt.Errorf("%w: invalid character %q %s at offset %d", ErrInvalid, d.data[d.i], what, d.i)
}

func (d *decoder) value(depth int, path string) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d at %s", ErrInvalid, maxDepth, pathOr(path))
	}
	if d.nodes++; d.nodes > maxNodes {
		return nil, fmt.Errorf("%w: more than %d values", ErrInvalid, maxNodes)
	}
	d.space()
	if d.i >= len(d.data) {
		return nil, d.syntax("")
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth, path)
	case c == '[':
		return d.array(depth, path)
	case c == '"':
		return d.str()
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, d.syntax("looking for beginning of value")
}

func (d *decoder) literal(word string) error {
	if !bytes.HasPrefix(d.data[d.i:], []byte(word)) {
		for k := 0; k < len(word) && d.i < len(d.data) && d.data[d.i] == word[k]; k++ {
			d.i++
		}
		return d.syntax("in literal " + word)
	}
	d.i += len(word)
	return nil
}

func (d *decoder) object(depth int, path string) (any, error) {
	d.i++ // {
	obj := map[string]any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return obj, nil
	}
	for {
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, d.syntax("looking for beginning of object key string")
		}
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		child := path + "." + key
		if _, dup := obj[key]; dup {
			return nil, fmt.Errorf("%w: duplicate key %s", ErrInvalid, strings.TrimPrefix(child, "."))
		}
		if d.space(); d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, d.syntax("after object key")
		}
		d.i++
		v, err := d.value(depth+1, child)
		if err != nil {
			return nil, err
		}
		obj[key] = v
		if done, err := d.next('}', "after object key:value pair"); done || err != nil {
			return obj, err
		}
	}
}

func (d *decoder) array(depth int, path string) (any, error) {
	d.i++ // [
	arr := []any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return arr, nil
	}
	for n := 0; ; n++ {
		v, err := d.value(depth+1, path+"["+strconv.Itoa(n)+"]")
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		if done, err := d.next(']', "after array element"); done || err != nil {
			return arr, err
		}
	}
}

// next reads what follows a member: a comma, or close ending the object or
// array (done).
func (d *decoder) next(close byte, after string) (done bool, err error) {
	d.space()
	switch {
	case d.i >= len(d.data):
		return false, d.syntax("")
	case d.data[d.i] == ',':
		d.i++
		return false, nil
	case d.data[d.i] == close:
		d.i++
		return true, nil
	}
	return false, d.syntax(after)
}

// str reads a string. Printable ASCII without escapes is taken as it is;
// anything else is unquoted by encoding/json.
func (d *decoder) str() (string, error) {
	start := d.i
	d.i++ // "
	plain := true
	for d.i < len(d.data) {
		switch c := d.data[d.i]; {
		case c == '"':
			d.i++
			if plain {
				return string(d.data[start+1 : d.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(d.data[start:d.i], &s); err != nil {
				return "", fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return s, nil
		case c == '\\':
			plain = false
			d.i += 2
		case c < 0x20:
			return "", d.syntax("in string literal")
		default:
			if c >= 0x80 {
				plain = false
			}
			d.i++
		}
	}
	d.i = len(d.data)
	return "", d.syntax("")
}

// number reads a number by JSON's grammar, kept exactly as written.
func (d *decoder) number() (any, error) {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.data[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.data) && d.data[d.i] == '0':
		d.i++
	case digits() == 0:
		return nil, d.syntax("in numeric literal")
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, d.syntax("after decimal point in numeric literal")
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.syntax("in exponent of numeric literal")
		}
	}
	return json.Number(d.data[start:d.i]), nil
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
	if printable(s) {
		// What encoding/json writes for it, without its encoder.
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode ends with a newline
}

// printable reports whether s is printable ASCII that needs no escape.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Canonical is the call's arguments in canonical form: what a capability
// binds and an executor performs.
func (c *Call) Canonical() string { return c.canonical }

// Hash identifies the call: SHA-256 over the tool name and the canonical
// arguments, hex.
func (c *Call) Hash() string {
	// Most calls fit a buffer on the stack, hashed at once.
	buf := make([]byte, 0, 1024)
	buf = append(append(append(buf, c.Tool...), 0), c.canonical...)
	sum := sha256.Sum256(buf)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// Lookup returns the value at a dotted argument path, e.g. "amount" or
// "amount.currency_code".
func (c *Call) Lookup(path string) (any, bool) {
	var v any = c.Args
	for more := true; more; {
		var part string
		part, path, more = strings.Cut(path, ".")
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
