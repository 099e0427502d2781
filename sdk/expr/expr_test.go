package expr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/sdk/expr"
)

func TestCompile(t *testing.T) {
	tool := expr.MustEnv(expr.Tool)
	for _, tc := range []struct {
		name, src string
		want      expr.Result
		err       string
	}{
		{name: "condition", src: `args.payee_id == record.claimant_id`, want: expr.Bool},
		{name: "usage", src: `usage.count < 3 && task.subject == "employee-7"`, want: expr.Bool},
		{name: "scalar", src: `size(args.body)`, want: expr.Scalar},
		{name: "syntax", src: `args.payee_id ==`, want: expr.Bool, err: "does not compile"},
		{name: "unknown variable", src: `payment.amount > 1`, want: expr.Bool, err: "undeclared reference"},
		{name: "not a bool", src: `"yes"`, want: expr.Bool, err: "want bool"},
		{name: "not a scalar", src: `[1, 2]`, want: expr.Scalar, err: "want a bool, number or string"},
		{name: "empty", src: `  `, want: expr.Bool, err: "empty expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.Compile(tc.src, tc.want)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			if !errors.Is(err, expr.ErrCompile) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Compile(%q) = %v, want ErrCompile naming %q", tc.src, err, tc.err)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	tool := expr.MustEnv(expr.Tool)
	vars := expr.Vars{
		"args":   map[string]any{"payee_id": "employee-7", "amount": map[string]any{"minor_units": int64(1740)}, "body": "hello"},
		"record": map[string]any{"claimant_id": "employee-7", "receipt_total": 17.40, "limit": uint64(100)},
		"task":   map[string]any{},
		"usage":  map[string]any{"count": int64(0)},
	}
	for _, tc := range []struct {
		src  string
		want bool
		err  bool
	}{
		{src: `args.payee_id == record.claimant_id`, want: true},
		{src: `args.amount.minor_units <= 10000`, want: true},
		{src: `args.amount.minor_units > record.receipt_total`, want: true}, // int against double
		{src: `record.limit >= 100`, want: true},                            // uint against int
		{src: `args.body.size() <= 2`, want: false},
		{src: `args.body.lowerAscii().contains("ell")`, want: true},
		{src: `has(record.salary)`, want: false},
		{src: `record.salary == "x"`, err: true}, // a missing key is an error, never true
	} {
		p, err := tool.Compile(tc.src, expr.Bool)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		got, err := p.Bool(vars)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s = %v, %v; want %v (error %v)", tc.src, got, err, tc.want, tc.err)
		}
	}
	rec := expr.MustEnv(expr.Record)
	p, err := rec.Compile(`double(record.receipt_total) <= 100.0`, expr.Scalar)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Value(expr.Vars{"record": map[string]any{"receipt_total": "38.25"}}); err != nil || v != true {
		t.Errorf("derived value = %v, %v", v, err)
	}
}

func TestCostIsBounded(t *testing.T) {
	tool := expr.MustEnv(expr.Tool)
	p, err := tool.Compile(`args.l.all(a, args.l.all(b, args.l.all(c, a + b + c >= 0)))`, expr.Bool)
	if err != nil {
		t.Fatal(err)
	}
	l := make([]any, 400)
	for i := range l {
		l[i] = int64(i)
	}
	if _, err := p.Bool(expr.Vars{"args": map[string]any{"l": l}}); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Errorf("a runaway evaluation = %v, want a cost limit error", err)
	}
}

func TestList(t *testing.T) {
	rb := expr.MustEnv(expr.Readback)
	result := map[string]any{
		"credits": []any{
			map[string]any{"id": "cr-1", "amount_minor": int64(1740), "tags": []any{"a", nil}, "ok": true},
			map[string]any{"id": "cr-2", "amount_minor": uint64(1 << 63), "ratio": 0.5, "raw": []byte("x")},
		},
		"count": int64(2),
	}
	for _, tc := range []struct {
		name, src string
		want      []any
		err       string // compile or evaluation error
	}{
		{name: "taken from the result", src: `result.credits`, want: result["credits"].([]any)},
		{name: "filtered", src: `result.credits.filter(c, c.id == effect.idempotency_key)`, want: []any{result["credits"].([]any)[1]}},
		{name: "built", src: `[{"n": result.count + 1, "s": "x"}]`, want: []any{map[string]any{"n": int64(3), "s": "x"}}},
		{name: "empty", src: `[]`, want: []any{}},
		{name: "not a list at compile time", src: `result.count + 1`, err: "want a list"},
		{name: "not a list at run time", src: `result.count`, err: "not a list"},
		{name: "missing key", src: `result.payments`, err: "no such key"},
		{name: "no plain form", src: `[duration("1s")]`, err: "no plain form"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := rb.Compile(tc.src, expr.List)
			if err == nil {
				var got []any
				got, err = p.List(expr.Vars{"result": result, "effect": map[string]any{"idempotency_key": "cr-2"}})
				if err == nil && tc.err == "" {
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("List (-want +got):\n%s", diff)
					}
					return
				}
			}
			if tc.err == "" || err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one naming %q", tc.src, err, tc.err)
			}
		})
	}
}

func TestMappingSeesNothingRead(t *testing.T) {
	m := expr.MustEnv(expr.Mapping)
	if _, err := m.Compile(`effect.idempotency_key + args.claim_id + call.tool`, expr.Scalar); err != nil {
		t.Errorf("a mapping over the call: %v", err)
	}
	for _, src := range []string{`result.id`, `size(rows)`} {
		if _, err := m.Compile(src, expr.Scalar); !errors.Is(err, expr.ErrCompile) {
			t.Errorf("mapping %s = %v, want ErrCompile", src, err)
		}
	}
}

func TestReads(t *testing.T) {
	rec := expr.MustEnv(expr.Record)
	for _, tc := range []struct {
		src   string
		keys  []string
		whole bool
	}{
		{src: `record.a`, keys: []string{"a"}},
		{src: `double(record.total) <= 100.0 && record.currency == "GBP"`, keys: []string{"currency", "total"}},
		{src: `record["b"] + record.a`, keys: []string{"a", "b"}},
		{src: `has(record.c) ? record.c : "none"`, keys: []string{"c"}},
		{src: `record.?d.orValue("x")`, keys: []string{"d"}},
		{src: `record.a.b`, keys: []string{"a"}},
		{src: `[record.a, record.b].size()`, keys: []string{"a", "b"}},
		{src: `{"k": record.e}.k`, keys: []string{"e"}},
		{src: `[1, 2].exists(x, x == record.f)`, keys: []string{"f"}},
		{src: `"v" + string(record.row_version)`, keys: []string{"row_version"}},
		{src: `size(record)`, whole: true},
		{src: `record[record.k]`, keys: []string{"k"}, whole: true},
		{src: `record.exists(k, k == "salary")`, whole: true},
		{src: `["a"].exists(record, record == "a")`}, // the loop variable hides the record
		{src: `true`},
	} {
		p, err := rec.Compile(tc.src, expr.Scalar)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		keys, whole := p.Reads("record")
		if diff := cmp.Diff(tc.keys, keys); diff != "" || whole != tc.whole {
			t.Errorf("Reads(%q) = %v, %v; want %v, %v", tc.src, keys, whole, tc.keys, tc.whole)
		}
	}
}

func TestPlain(t *testing.T) {
	m := expr.MustEnv(expr.Mapping)
	vars := expr.Vars{
		"args":   map[string]any{"amount": map[string]any{"currency_code": "GBP", "minor_units": int64(1740)}, "note": nil},
		"effect": map[string]any{"idempotency_key": "k-1"},
	}
	for _, tc := range []struct {
		src  string
		want any
		err  string
	}{
		{src: `args.amount`, want: map[string]any{"currency_code": "GBP", "minor_units": int64(1740)}},
		{src: `args.amount.minor_units`, want: int64(1740)},
		{src: `args.note`, want: nil},
		{src: `[effect.idempotency_key, 2u, 0.5, true]`, want: []any{"k-1", uint64(2), 0.5, true}},
		{src: `args.missing`, err: "no such key"},
		{src: `duration("1s")`, err: "no plain form"},
	} {
		p, err := m.Compile(tc.src, expr.Plain)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		got, err := p.Plain(vars)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Plain(%q) = %v, %v; want an error naming %q", tc.src, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Plain(%q): %v", tc.src, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Plain(%q) (-want +got):\n%s", tc.src, diff)
		}
	}
}

func TestReplySeesTheResult(t *testing.T) {
	r := expr.MustEnv(expr.Reply)
	p, err := r.Compile(`result.credit_id + "/" + effect.idempotency_key`, expr.Scalar)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Value(expr.Vars{"result": map[string]any{"credit_id": "cr-9"}, "effect": map[string]any{"idempotency_key": "k-1"}})
	if err != nil || got != "cr-9/k-1" {
		t.Errorf("Value = %v, %v; want cr-9/k-1", got, err)
	}
	if _, err := r.Compile(`size(rows)`, expr.Scalar); !errors.Is(err, expr.ErrCompile) {
		t.Errorf("a reply expression over rows = %v, want ErrCompile", err)
	}
}

// TestUngivenVariablesAreEmpty: a declared variable an evaluation is not
// given reads as an empty map or list, never as a value another
// evaluation gave.
func TestUngivenVariablesAreEmpty(t *testing.T) {
	rb := expr.MustEnv(expr.Readback)
	for _, tc := range []struct {
		src  string
		vars expr.Vars
		want bool
	}{
		{`size(rows) == 0 && !has(result.id) && size(args) == 0`, nil, true},
		{`size(rows) == 1 && result.id == "r-1"`, expr.Vars{"rows": []any{map[string]any{}}, "result": map[string]any{"id": "r-1"}}, true},
		{`size(rows) == 0 && !has(result.id)`, expr.Vars{"args": map[string]any{"x": int64(1)}}, true},
	} {
		p, err := rb.Compile(tc.src, expr.Bool)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.Bool(tc.vars); err != nil || got != tc.want {
			t.Errorf("%s with %v = %v, %v; want %v", tc.src, tc.vars, got, err, tc.want)
		}
	}
}

// BenchmarkBool evaluates a tool constraint as a decision does.
func BenchmarkBool(b *testing.B) {
	p, err := expr.MustEnv(expr.Tool).Compile(`args.amount.minor_units <= 10000 && args.payee_id == record.claimant_id`, expr.Bool)
	if err != nil {
		b.Fatal(err)
	}
	vars := expr.Vars{
		"args":   map[string]any{"payee_id": "employee-7", "amount": map[string]any{"minor_units": int64(1740)}},
		"record": map[string]any{"claimant_id": "employee-7"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.Bool(vars); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
