package expr

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// ErrCompile marks an expression that does not parse or type-check.
var ErrCompile = errors.New("expression does not compile")

// costLimit bounds one evaluation; declared expressions are small, so only
// a runaway over a large input reaches it.
const costLimit = 1_000_000

// Variables name what an environment's expressions may read. Each is a map
// from string to any value, except the ones named in Lists, which are lists
// of such maps.
type Variables struct {
	Maps  []string
	Lists []string
}

// The environments of the declarations.
var (
	// Tool expressions (destination classes, constraints) read the call's
	// arguments, the bound record as the cited evidence shows it, the
	// task (subject, purpose, record_key) and its usage (count,
	// amount_minor, currency).
	Tool = Variables{Maps: []string{"args", "record", "task", "usage"}}
	// Record expressions (derived fields) read one record of a source.
	Record = Variables{Maps: []string{"record"}}
	// Readback expressions read what the readback query returned (rows,
	// and result for a tool that returns one object), the call that was
	// granted (args, call: tool, destination, record, state_version) and
	// its effect (effect: id, idempotency_key, capability_id, task_id,
	// record_ref).
	Readback = Variables{Maps: []string{"args", "call", "effect", "result"}, Lists: []string{"rows"}}
	// Mapping expressions compute the arguments of an upstream call made
	// for a granted call (a readback's query arguments) before anything is
	// read: they see only the call (args, call) and its effect (effect),
	// so a mapping cannot depend on what the call itself returns.
	Mapping = Variables{Maps: []string{"args", "call", "effect"}}
	// Reply expressions read what an upstream call for a granted call
	// answered (result: its JSON object) beside the call and its effect,
	// e.g. the reference an executor's target gave the effect.
	Reply = Variables{Maps: []string{"args", "call", "effect", "result"}}
)

// Env is a compiled environment.
type Env struct {
	env  *cel.Env
	vars Variables
}

// NewEnv builds the environment for v.
func NewEnv(v Variables) (*Env, error) {
	opts := []cel.EnvOption{
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
	}
	for _, name := range v.Maps {
		opts = append(opts, cel.Variable(name, cel.MapType(cel.StringType, cel.DynType)))
	}
	for _, name := range v.Lists {
		opts = append(opts, cel.Variable(name, cel.ListType(cel.MapType(cel.StringType, cel.DynType))))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("expression environment: %w", err)
	}
	return &Env{env: env, vars: v}, nil
}

// MustEnv is NewEnv for the package's fixed environments, which always
// build.
func MustEnv(v Variables) *Env {
	e, err := NewEnv(v)
	if err != nil {
		panic(err)
	}
	return e
}

// Result is what an expression must yield.
type Result int

// Results.
const (
	// Bool: a condition.
	Bool Result = iota + 1
	// Scalar: a bool, int, uint, double or string (a derived value).
	Scalar
	// List: a list (e.g. the rows a readback takes from a tool's result).
	List
	// Plain: any value with a plain form (see [Program.Plain]), e.g. a
	// field of a request body an executor sends.
	Plain
)

// Program is a compiled expression.
type Program struct {
	src  string
	prg  cel.Program
	ast  *cel.Ast
	vars Variables
}

// Compile parses and type-checks src. The error wraps ErrCompile and
// quotes the expression.
func (e *Env) Compile(src string, want Result) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("%w: empty expression", ErrCompile)
	}
	ast, iss := e.env.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrCompile, src, iss.Err())
	}
	out := ast.OutputType()
	switch want {
	case Bool:
		if !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
			return nil, fmt.Errorf("%w: %q yields %s, want bool", ErrCompile, src, out)
		}
	case Scalar:
		ok := out.IsExactType(cel.DynType)
		for _, t := range []*cel.Type{cel.BoolType, cel.IntType, cel.UintType, cel.DoubleType, cel.StringType} {
			ok = ok || out.IsExactType(t)
		}
		if !ok {
			return nil, fmt.Errorf("%w: %q yields %s, want a bool, number or string", ErrCompile, src, out)
		}
	case List:
		if out.Kind() != types.ListKind && !out.IsExactType(cel.DynType) {
			return nil, fmt.Errorf("%w: %q yields %s, want a list", ErrCompile, src, out)
		}
	}
	prg, err := e.env.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrCompile, src, err)
	}
	return &Program{src: src, prg: prg, ast: ast, vars: e.vars}, nil
}

// String is the expression's source.
func (p *Program) String() string { return p.src }

// Vars are the values of an environment's variables. A variable left out
// is an empty map (or list).
type Vars map[string]any

// Bool evaluates a condition. An evaluation error (a missing key, a type
// mismatch at run time) is returned, never taken as true.
func (p *Program) Bool(vars Vars) (bool, error) {
	v, err := p.eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("evaluate %q: yields %s, not bool", p.src, v.Type().TypeName())
	}
	return bool(b), nil
}

// Value evaluates a scalar expression to a bool, int64, uint64, float64 or
// string.
func (p *Program) Value(vars Vars) (any, error) {
	v, err := p.eval(vars)
	if err != nil {
		return nil, err
	}
	switch t := v.(type) {
	case types.Bool:
		return bool(t), nil
	case types.Int:
		return int64(t), nil
	case types.Uint:
		return uint64(t), nil
	case types.Double:
		return float64(t), nil
	case types.String:
		return string(t), nil
	}
	return nil, fmt.Errorf("evaluate %q: yields %s, not a bool, number or string", p.src, v.Type().TypeName())
}

// List evaluates a list expression to its elements as plain Go values:
// map[string]any for a map, []any for a list, and bool, int64, uint64,
// float64, string, []byte or nil for the rest, as [Vars] take them.
func (p *Program) List(vars Vars) ([]any, error) {
	v, err := p.eval(vars)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(traits.Lister); !ok {
		return nil, fmt.Errorf("evaluate %q: yields %s, not a list", p.src, v.Type().TypeName())
	}
	out, err := native(v, 0)
	if err != nil {
		return nil, fmt.Errorf("evaluate %q: %w", p.src, err)
	}
	return out.([]any), nil
}

// Plain evaluates an expression to its plain Go value, as [Program.List]
// gives its elements: what encoding/json writes as the JSON value of the
// same shape.
func (p *Program) Plain(vars Vars) (any, error) {
	v, err := p.eval(vars)
	if err != nil {
		return nil, err
	}
	out, err := native(v, 0)
	if err != nil {
		return nil, fmt.Errorf("evaluate %q: %w", p.src, err)
	}
	return out, nil
}

// maxNesting bounds how deep [native] follows maps and lists; the cost
// limit already bounds how large a value an expression can build.
const maxNesting = 64

// native converts a CEL value to the plain Go value expressions take.
func native(v ref.Val, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("value nested deeper than %d", maxNesting)
	}
	switch t := v.(type) {
	case types.Bool:
		return bool(t), nil
	case types.Int:
		return int64(t), nil
	case types.Uint:
		return uint64(t), nil
	case types.Double:
		return float64(t), nil
	case types.String:
		return string(t), nil
	case types.Bytes:
		return []byte(t), nil
	case types.Null:
		return nil, nil
	case traits.Mapper:
		out := map[string]any{}
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			key, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is %s, not string", k, k.Type().TypeName())
			}
			e, err := native(t.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(key)] = e
		}
		return out, nil
	case traits.Lister:
		out := []any{}
		for it := t.Iterator(); it.HasNext() == types.True; {
			e, err := native(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s value has no plain form", v.Type().TypeName())
}

func (p *Program) eval(vars Vars) (ref.Val, error) {
	v, _, err := p.prg.Eval(&activation{vars: vars, decl: &p.vars})
	if err != nil {
		return nil, fmt.Errorf("evaluate %q: %w", p.src, err)
	}
	return v, nil
}

// Declared variables an evaluation is not given read as empty. CEL only
// reads them, so every evaluation shares these.
var (
	emptyMap  = map[string]any{}
	emptyList = []any{}
)

// activation resolves an evaluation's variables: those given, and an
// empty map or list for a declared one that is not, without a map built
// for every evaluation.
type activation struct {
	vars Vars
	decl *Variables
}

func (a *activation) ResolveName(name string) (any, bool) {
	if v, ok := a.vars[name]; ok {
		return v, true
	}
	if slices.Contains(a.decl.Maps, name) {
		return emptyMap, true
	}
	if slices.Contains(a.decl.Lists, name) {
		return emptyList, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// Reads names the keys of the map variable v that the expression reads by
// name: record.a, record["b"], has(record.c), record.?d. whole is true
// when it also uses v in a way that does not name a key (passed on
// whole, indexed by a computed key, iterated), so any key may be read.
// Configurations use it to refuse, at load, an expression over a field
// that was never declared.
func (p *Program) Reads(v string) (keys []string, whole bool) {
	seen := map[string]bool{}
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		switch e.Kind() {
		case ast.IdentKind:
			if e.AsIdent() == v {
				whole = true
			}
		case ast.SelectKind:
			s := e.AsSelect()
			if isIdent(s.Operand(), v) {
				seen[s.FieldName()] = true
				return
			}
			walk(s.Operand())
		case ast.CallKind:
			c := e.AsCall()
			args := c.Args()
			if fn := c.FunctionName(); (fn == operators.Index || fn == operators.OptIndex || fn == operators.OptSelect) &&
				len(args) == 2 && isIdent(args[0], v) {
				if args[1].Kind() == ast.LiteralKind {
					if k, ok := args[1].AsLiteral().Value().(string); ok {
						seen[k] = true
						return
					}
				}
			}
			if c.IsMemberFunction() {
				walk(c.Target())
			}
			for _, a := range args {
				walk(a)
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el)
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				walk(en.AsMapEntry().Key())
				walk(en.AsMapEntry().Value())
			}
		case ast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value())
			}
		case ast.ComprehensionKind:
			c := e.AsComprehension()
			walk(c.IterRange())
			walk(c.AccuInit())
			// Inside the loop a variable of the same name hides v.
			if c.IterVar() != v && c.IterVar2() != v && c.AccuVar() != v {
				walk(c.LoopCondition())
				walk(c.LoopStep())
				walk(c.Result())
			}
		}
	}
	walk(p.ast.NativeRep().Expr())
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, whole
}

func isIdent(e ast.Expr, name string) bool {
	return e.Kind() == ast.IdentKind && e.AsIdent() == name
}
