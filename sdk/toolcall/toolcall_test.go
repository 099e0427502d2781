package toolcall_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		canonical  string
		err        string
	}{
		{name: "sorted and compact", args: `{ "b": 1, "a": {"y": [1, 2.50, "x"], "x": null} }`, canonical: `{"a":{"x":null,"y":[1,2.50,"x"]},"b":1}`},
		{name: "exact big integers", args: `{"n": 123456789012345678901234567890}`, canonical: `{"n":123456789012345678901234567890}`},
		{name: "no html escaping", args: `{"t": "<a & b>"}`, canonical: `{"t":"<a & b>"}`},
		{name: "unicode kept", args: `{"t": "caf\u00e9 ☕"}`, canonical: `{"t":"café ☕"}`},
		{name: "duplicate key", args: `{"a": 1, "a": 2}`, err: "duplicate key a"},
		{name: "nested duplicate key", args: `{"a": {"b": 1, "b": 1}}`, err: "duplicate key a.b"},
		{name: "not an object", args: `[1]`, err: "must be a JSON object"},
		{name: "trailing data", args: `{"a": 1} {}`, err: "data after"},
		{name: "empty", args: ``, err: "invalid arguments"},
		{name: "broken", args: `{"a": }`, err: "invalid arguments"},
		{name: "too deep", args: `{"a":` + repeat("[", 40) + repeat("]", 40) + `}`, err: "nested deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := toolcall.Parse("tool", tc.args)
			if tc.err != "" {
				if err == nil || !errors.Is(err, toolcall.ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%s) = %v, want an ErrInvalid naming %q", tc.args, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.canonical, c.Canonical()); diff != "" {
				t.Errorf("canonical (-want +got):\n%s", diff)
			}
			// The canonical form is a fixed point.
			again, err := toolcall.Parse("tool", c.Canonical())
			if err != nil || again.Canonical() != c.Canonical() || again.Hash() != c.Hash() {
				t.Errorf("re-parsing the canonical form changed it: %v", err)
			}
		})
	}
}

func TestHashBindsToolAndArguments(t *testing.T) {
	a, _ := toolcall.Parse("refund", `{"x":1}`)
	b, _ := toolcall.Parse("refund", `{"x":2}`)
	c, _ := toolcall.Parse("refund2", `{"x":1}`)
	d, _ := toolcall.Parse("refund", `{ "x" : 1 }`)
	if a.Hash() == b.Hash() || a.Hash() == c.Hash() || a.Hash() != d.Hash() {
		t.Errorf("hashes: %s %s %s %s", a.Hash(), b.Hash(), c.Hash(), d.Hash())
	}
}

func TestMoney(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       toolcall.Money
		present    bool
		err        bool
	}{
		{name: "exact", args: `{"amount":{"currency_code":"GBP","minor_units":1740}}`, want: toolcall.Money{Currency: "GBP", Minor: 1740}, present: true},
		{name: "largest int64", args: `{"amount":{"currency_code":"GBP","minor_units":9223372036854775807}}`, want: toolcall.Money{Currency: "GBP", Minor: 9223372036854775807}, present: true},
		{name: "absent", args: `{}`},
		{name: "fraction", args: `{"amount":{"currency_code":"GBP","minor_units":17.4}}`, present: true, err: true},
		{name: "exponent", args: `{"amount":{"currency_code":"GBP","minor_units":1.74e3}}`, present: true, err: true},
		{name: "overflow", args: `{"amount":{"currency_code":"GBP","minor_units":9223372036854775808}}`, present: true, err: true},
		{name: "string units", args: `{"amount":{"currency_code":"GBP","minor_units":"1740"}}`, present: true, err: true},
		{name: "extra key", args: `{"amount":{"currency_code":"GBP","minor_units":1,"fee":1}}`, present: true, err: true},
		{name: "not an object", args: `{"amount":17.40}`, present: true, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := toolcall.Parse("refund", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			got, present, err := c.Money("amount")
			if (err != nil) != tc.err || present != tc.present || got != tc.want {
				t.Errorf("Money = %+v, %v, %v; want %+v, %v, err %v", got, present, err, tc.want, tc.present, tc.err)
			}
		})
	}
}

func TestNative(t *testing.T) {
	c, err := toolcall.Parse("t", `{"i": 7, "neg": -3, "u": 18446744073709551615, "f": 2.5, "s": "x", "l": [1, {"b": true}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(7), "neg": int64(-3), "u": uint64(18446744073709551615), "f": 2.5, "s": "x",
		"l": []any{int64(1), map[string]any{"b": true}}}
	if diff := cmp.Diff(want, toolcall.Native(c.Args)); diff != "" {
		t.Errorf("Native (-want +got):\n%s", diff)
	}
	if v, ok := c.Lookup("l"); !ok || len(v.([]any)) != 2 {
		t.Errorf("Lookup(l) = %v, %v", v, ok)
	}
	if _, ok := c.Lookup("s.x"); ok {
		t.Error("Lookup through a string succeeded")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,2,{"c":null}]}}`, `{"a":1,"a":2}`, `{"t":"\u00e9"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := toolcall.Parse("t", s)
		if err != nil {
			return
		}
		again, err := toolcall.Parse("t", c.Canonical())
		if err != nil {
			t.Fatalf("canonical form %q does not parse: %v", c.Canonical(), err)
		}
		if again.Canonical() != c.Canonical() {
			t.Fatalf("canonical form is not a fixed point: %q → %q", c.Canonical(), again.Canonical())
		}
	})
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }

// TestHashVector pins Hash: capabilities and answered requests keep it,
// so a change of encoding would orphan them.
func TestHashVector(t *testing.T) {
	c, err := toolcall.Parse("refund", `{ "a" : 1 }`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Hash(), "9944198e41ec7848d4a45ae64bc5fe76d32ecd7b47b9e09226e53eba74834434"; got != want {
		t.Errorf("Hash() = %s, want %s", got, want)
	}
	for path, want := range map[string]any{"a": json.Number("1"), "a.b": nil, "": nil} {
		if v, ok := c.Lookup(path); v != want || ok != (want != nil) {
			t.Errorf("Lookup(%q) = %v, %v; want %v", path, v, ok, want)
		}
	}
}
