package contract

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ambitkernel/ambit/kernel/evaluate"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/money"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Compiled is a contract ready for the kernel: the evaluator's form plus
// the declarations facts are derived with, every expression compiled and
// every schema checked once.
type Compiled struct {
	Proto *contractv1.Contract
	Eval  *evaluate.Contract
	// Tools by name.
	Tools map[string]*Tool
	// Derived field expressions by source and field name.
	Derived map[string]map[string]*expr.Program
}

// Tool is a compiled tool grant.
type Tool struct {
	Grant        *contractv1.ToolGrant
	schema       *jsonschema.Schema
	properties   []string
	Destinations []Destination
	Constraints  []Constraint
	// Reads is what the destinations and constraints read of each tool
	// variable they read at all (args, record, task, usage): a decision
	// gives them those variables alone, each with only the keys read.
	Reads map[string]Read
}

// Read is what a tool's expressions read of one variable: the keys they
// name, or the whole of it.
type Read struct {
	Whole bool
	Keys  []string
}

// ReadsUsage is whether a destination or constraint reads the task's
// usage: when none does, usage changes no more of a decision's facts than
// its counts.
func (t *Tool) ReadsUsage() bool {
	_, ok := t.Reads["usage"]
	return ok
}

// Destination is a compiled destination class.
type Destination struct {
	Name string
	When *expr.Program
}

// Constraint is a compiled constraint.
type Constraint struct {
	Code, Message string
	Expr          *expr.Program
}

// The expression environments; they are fixed, so building them cannot
// fail.
var (
	toolEnv   = expr.MustEnv(expr.Tool)
	recordEnv = expr.MustEnv(expr.Record)
)

// ErrArguments marks a call whose arguments do not fit its tool's
// declaration.
var ErrArguments = errors.New("arguments do not fit the tool")

// Check validates a parsed call against the tool: every argument is
// declared, the schema holds, and the amount, if the tool has one, is
// well-formed Money.
func (t *Tool) Check(call *toolcall.Call) error {
	var extra []string
	for k := range call.Args {
		if !slices.Contains(t.properties, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return fmt.Errorf("%w: tool %q declares no argument %s", ErrArguments, t.Grant.GetName(), strings.Join(extra, ", "))
	}
	if t.schema != nil {
		if err := t.schema.Validate(call.Args); err != nil {
			return fmt.Errorf("%w: tool %q: %s", ErrArguments, t.Grant.GetName(), schemaError(err))
		}
	}
	if a := t.Grant.GetAmountArgument(); a != "" {
		m, present, err := call.Money(a)
		if err == nil && present {
			err = money.CheckPositive(&contractv1.Money{CurrencyCode: m.Currency, MinorUnits: m.Minor})
		}
		if err != nil {
			return fmt.Errorf("%w: tool %q: %s: %v", ErrArguments, t.Grant.GetName(), a, err)
		}
	}
	return nil
}

var english = message.NewPrinter(language.English)

// schemaError flattens a validation error into one line that names each
// failing location.
func schemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(english)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(out, "; ")
}

// compileTools compiles the action aperture's tools, naming the tool and
// expression of the first bad declaration. A tool cm compiled before, for
// this contract or another, is shared; what it needs of the rest of the
// contract is checked again.
func compileTools(c *contractv1.Contract, cm *Compiler) (map[string]*Tool, error) {
	out := make(map[string]*Tool, len(c.GetAction().GetTools()))
	for i, g := range c.GetAction().GetTools() {
		f := fmt.Sprintf("action.tools[%d]", i)
		t, err := cm.tool(f, g)
		if err != nil {
			return nil, err
		}
		if err := checkToolSource(f, g, c); err != nil {
			return nil, err
		}
		out[g.GetName()] = t
	}
	return out, nil
}

// tool compiles g, or returns what cm compiled an identical grant to. A
// nil cm compiles every grant.
func (cm *Compiler) tool(f string, g *contractv1.ToolGrant) (*Tool, error) {
	if cm == nil {
		return compileTool(f, g)
	}
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(g)
	if err != nil {
		return compileTool(f, g)
	}
	if t, ok := cm.tools.Get(string(key)); ok {
		return t, nil
	}
	t, err := compileTool(f, g)
	if err == nil {
		cm.tools.Put(string(key), t)
	}
	return t, err
}

// checkToolSource checks that the source a tool's record comes from is
// one of the contract's: the one check of a tool that reads the rest of
// its contract.
func checkToolSource(f string, g *contractv1.ToolGrant, c *contractv1.Contract) error {
	r := g.GetRecord()
	if r == nil || slices.ContainsFunc(c.GetEvidence().GetSources(), func(s *contractv1.SourceGrant) bool { return s.GetName() == r.GetSource() }) {
		return nil
	}
	return invalid(f+".record.source", "tool %q: source %q is not granted", g.GetName(), r.GetSource())
}

// compileTool compiles a tool grant on its own: its schema, destinations
// and constraints.
func compileTool(f string, g *contractv1.ToolGrant) (*Tool, error) {
	name := g.GetName()
	t := &Tool{Grant: g}
	if g.GetInputSchema() == nil {
		return nil, invalid(f+".input_schema", "tool %q declares no argument schema", name)
	}
	sch, props, err := compileSchema(g)
	if err != nil {
		return nil, invalid(f+".input_schema", "tool %q: %v", name, err)
	}
	t.schema, t.properties = sch, props
	if a := g.GetAmountArgument(); a != "" && !slices.Contains(props, strings.Split(a, ".")[0]) {
		return nil, invalid(f+".amount_argument", "tool %q declares no argument %q", name, a)
	}
	if r := g.GetRecord(); r != nil {
		switch {
		case r.GetSource() == "" || r.GetArgument() == "":
			return nil, invalid(f+".record", "tool %q: needs both source and argument", name)
		case !slices.Contains(props, r.GetArgument()):
			return nil, invalid(f+".record.argument", "tool %q declares no argument %q", name, r.GetArgument())
		}
	}
	seen := map[string]bool{}
	for j, d := range g.GetDestinations() {
		df := fmt.Sprintf("%s.destinations[%d]", f, j)
		if d.GetName() == "" || seen[d.GetName()] {
			return nil, invalid(df+".name", "tool %q: empty or duplicate destination class %q", name, d.GetName())
		}
		seen[d.GetName()] = true
		p, err := toolEnv.Compile(d.GetWhen(), expr.Bool)
		if err != nil {
			return nil, invalid(df+".when", "tool %q, destination %q: %v", name, d.GetName(), err)
		}
		t.Destinations = append(t.Destinations, Destination{Name: d.GetName(), When: p})
	}
	codes := map[string]bool{}
	for j, k := range g.GetConstraints() {
		kf := fmt.Sprintf("%s.constraints[%d]", f, j)
		if k.GetCode() == "" || codes[k.GetCode()] {
			return nil, invalid(kf+".code", "tool %q: empty or duplicate constraint code %q", name, k.GetCode())
		}
		codes[k.GetCode()] = true
		p, err := toolEnv.Compile(k.GetExpression(), expr.Bool)
		if err != nil {
			return nil, invalid(kf+".expression", "tool %q, constraint %s: %v", name, k.GetCode(), err)
		}
		t.Constraints = append(t.Constraints, Constraint{Code: k.GetCode(), Message: k.GetMessage(), Expr: p})
	}
	t.Reads = toolReads(t)
	return t, nil
}

// toolReads is what t's destinations and constraints read of each tool
// variable.
func toolReads(t *Tool) map[string]Read {
	var programs []*expr.Program
	for _, d := range t.Destinations {
		programs = append(programs, d.When)
	}
	for _, k := range t.Constraints {
		programs = append(programs, k.Expr)
	}
	out := map[string]Read{}
	for _, v := range expr.Tool.Maps {
		var r Read
		for _, p := range programs {
			keys, whole := p.Reads(v)
			r.Whole = r.Whole || whole
			r.Keys = append(r.Keys, keys...)
		}
		if r.Whole || len(r.Keys) > 0 {
			slices.Sort(r.Keys)
			r.Keys = slices.Compact(r.Keys)
			out[v] = r
		}
	}
	return out
}

// compileSchema compiles a tool's argument schema as JSON Schema 2020-12
// and returns the top-level argument names it declares. The schema must
// describe an object; nothing is fetched from anywhere.
func compileSchema(g *contractv1.ToolGrant) (*jsonschema.Schema, []string, error) {
	raw, err := protojson.Marshal(g.GetInputSchema())
	if err != nil {
		return nil, nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return nil, nil, err
	}
	obj, _ := doc.(map[string]any)
	if typ, _ := obj["type"].(string); typ != "object" {
		return nil, nil, errors.New(`the schema's "type" must be "object"`)
	}
	propsObj, _ := obj["properties"].(map[string]any)
	props := make([]string, 0, len(propsObj))
	for k := range propsObj {
		props = append(props, k)
	}
	slices.Sort(props)
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.UseLoader(noLoader{})
	url := "urn:ambit:tool:" + g.GetName()
	if err := comp.AddResource(url, doc); err != nil {
		return nil, nil, err
	}
	sch, err := comp.Compile(url)
	if err != nil {
		return nil, nil, err
	}
	return sch, props, nil
}

// noLoader refuses every external reference: a schema is self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s: external references are not loaded", url)
}

// compileDerived compiles the derived field expressions of every source.
func compileDerived(c *contractv1.Contract, cm *Compiler) (map[string]map[string]*expr.Program, error) {
	out := map[string]map[string]*expr.Program{}
	for i, s := range c.GetEvidence().GetSources() {
		for j, d := range s.GetDerived() {
			p, err := cm.derivedField(d.GetExpression())
			if err != nil {
				return nil, invalid(fmt.Sprintf("evidence.sources[%d].derived[%d].expression", i, j),
					"source %q, derived field %q: %v", s.GetName(), d.GetName(), err)
			}
			if out[s.GetName()] == nil {
				out[s.GetName()] = map[string]*expr.Program{}
			}
			out[s.GetName()][d.GetName()] = p
		}
	}
	return out, nil
}

// derivedField compiles a derived field's expression, or returns what cm
// compiled the same expression to. A nil cm compiles every expression.
func (cm *Compiler) derivedField(src string) (*expr.Program, error) {
	if cm == nil {
		return recordEnv.Compile(src, expr.Scalar)
	}
	if p, ok := cm.derived.Get(src); ok {
		return p, nil
	}
	p, err := recordEnv.Compile(src, expr.Scalar)
	if err == nil {
		cm.derived.Put(src, p)
	}
	return p, err
}

// SourceFields lists what a source grant releases (raw, derived and
// quarantined fields), or nil when it narrows nothing and the aperture's
// fields apply.
func SourceFields(s *contractv1.SourceGrant) []string {
	if len(s.GetFields()) == 0 && len(s.GetDerived()) == 0 && len(s.GetQuarantined()) == 0 {
		return nil
	}
	out := slices.Clone(s.GetFields())
	for _, d := range s.GetDerived() {
		out = append(out, d.GetName())
	}
	return append(out, s.GetQuarantined()...)
}
