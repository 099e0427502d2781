package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tokenDecode is encoding/json's token decoder with the same rules as
// Decode: the reference Decode must agree with.
func tokenDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	nodes := 0
	v, err := tokenValue(dec, 0, &nodes)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func tokenValue(dec *json.Decoder, depth int, nodes *int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("too deep")
	}
	if *nodes++; *nodes > maxNodes {
		return nil, errors.New("too many")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key := kt.(string)
				if _, dup := obj[key]; dup {
					return nil, errors.New("duplicate")
				}
				v, err := tokenValue(dec, depth+1, nodes)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := tokenValue(dec, depth+1, nodes)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, errors.New("unexpected delimiter")
	default:
		return t, nil
	}
}

var decodeSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"a":{"b":[1,2,{"c":null}]}}`, `{"a":1,"a":2}`, `{"t":"\u00e9"}`, `{"t":"caf\u00e9 ☕ \ud83d\ude00 \ud800"}`,
	` { "a" : [ true , false , null ] } `, `{"n":-0.5e+10}`, `{"n":01}`, `{"n":-}`, `{"n":1.}`, `{"n":1e}`, `{"n":.5}`,
	`{"s":"a\"b\\c\/d\b\f\n\r\t"}`, `{"s":"\x01"}`, "{\"s\":\"\xff\xfe\"}", `{"s":"\u12"}`, `{"a":tru}`, `{"a":nul}`, `"x"`, `12`,
	`{"a" 1}`, `{"a":1,}`, `[1,]`, `{"a":1}x`, `{"a":1} `, `[` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 41), "\ufeff{}", `{"\u0061":1,"a":2}`,
}

// FuzzDecodeAgreesWithTokenDecoder: Decode accepts exactly what the token
// decoder with the same rules accepts, and yields the same values; the
// canonical writer writes a string as encoding/json does.
func FuzzDecodeAgreesWithTokenDecoder(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The canonical writer agrees with encoding/json's for strings.
		var b, ref bytes.Buffer
		writeString(&b, string(data))
		e := json.NewEncoder(&ref)
		e.SetEscapeHTML(false)
		_ = e.Encode(string(data))
		if b.String()+"\n" != ref.String() {
			t.Fatalf("writeString(%q) = %s, encoding/json writes %s", data, b.String(), ref.String())
		}
		got, err := Decode(data)
		want, werr := tokenDecode(data)
		if (err != nil) != (werr != nil) {
			t.Fatalf("Decode(%q) = %v, %v; the token decoder: %v, %v", data, got, err, want, werr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode(%q) error %v is not ErrInvalid", data, err)
			}
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Decode(%q) (-token decoder +Decode):\n%s", data, diff)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	args := `{"claim_id":"B-00042","claimant_id":"CUST-77","amount":{"currency_code":"GBP","minor_units":1740},"reason":"duplicate charge"}`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("refund", args); err != nil {
			b.Fatal(err)
		}
	}
}
