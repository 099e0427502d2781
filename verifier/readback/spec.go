package readback

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Spec declares one tool's readback: exactly one connector and at least
// one check.
type Spec struct {
	// SQL reads rows of a table.
	SQL *SQL `json:"sql,omitempty"`
	// MCP calls a read-only tool of an upstream MCP server.
	MCP *MCP `json:"mcp,omitempty"`
	// Checks are the postconditions; each must hold for VERIFIED.
	Checks []Check `json:"checks"`
}

// SQL reads the declared columns of the rows whose key column equals the
// effect's idempotency key.
type SQL struct {
	// Database is an SQLite file (a path or sqlite:PATH) or a
	// postgres:// URL, opened read-only: the verifier's own path to the
	// system of record.
	Database string `json:"database"`
	// Table is the table the tool's executor writes.
	Table string `json:"table"`
	// KeyColumn holds the idempotency key of the effect that wrote a row.
	KeyColumn string `json:"key_column"`
	// Columns are all the readback reads; each row is bound as a map from
	// these names to their values.
	Columns []string `json:"columns"`
}

// MCP calls a read-only tool of an upstream MCP server.
type MCP struct {
	// Server is how to reach the server.
	Server mcpconn.Config `json:"server"`
	// Tool is the read-only tool to call.
	Tool string `json:"tool"`
	// Arguments maps each argument of the tool to a CEL expression over
	// args, call and effect (the Mapping environment) yielding a bool,
	// number or string.
	Arguments map[string]string `json:"arguments,omitempty"`
	// Rows is an optional CEL expression over the result (and args, call,
	// effect) giving the list bound to rows, e.g. result.items; each
	// element must be an object. Without it, rows is the result alone.
	Rows string `json:"rows,omitempty"`
}

// Check is one postcondition.
type Check struct {
	// Code names the finding when the check fails, e.g.
	// "AMOUNT_MISMATCH".
	Code string `json:"code"`
	// Expression is a CEL condition over rows, result, args, call and
	// effect (the Readback environment).
	Expression string `json:"expression"`
}

// Limits of a declaration.
const (
	maxChecks    = 64
	maxColumns   = 256
	maxArguments = 64
	maxNameLen   = 128
)

var (
	toolRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	codeRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	argRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
)

// The environments of the declared expressions, built once.
var (
	readbackEnv = expr.MustEnv(expr.Readback)
	mappingEnv  = expr.MustEnv(expr.Mapping)
)

// Validate checks specs (tool name to declaration), found under the
// configuration key path, without touching a database or a server. It
// reports every problem, each naming its key path.
func Validate(path string, specs map[string]Spec) error {
	_, err := compileAll(path, specs)
	return err
}

// compileAll compiles every declaration, in tool name order so that the
// problems are reported in a stable order.
func compileAll(path string, specs map[string]Spec) (map[string]*Readback, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s: at least one readback is required", path)
	}
	out := make(map[string]*Readback, len(specs))
	var errs []error
	for _, tool := range slices.Sorted(maps.Keys(specs)) {
		rb, err := compile(path+"."+tool, tool, specs[tool])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[tool] = rb
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// compile checks one declaration found at path and compiles its
// expressions.
func compile(path, tool string, s Spec) (*Readback, error) {
	var errs []error
	fail := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", path, key, fmt.Sprintf(format, args...)))
	}
	if len(tool) > maxNameLen || !toolRE.MatchString(tool) {
		fail("", "the tool name must be 1 to %d letters, digits or _.-", maxNameLen)
	}
	rb := &Readback{tool: tool}
	switch {
	case s.SQL == nil && s.MCP == nil:
		fail("", "declare one connector: sql or mcp")
	case s.SQL != nil && s.MCP != nil:
		fail("", "declare one connector, not both sql and mcp")
	case s.SQL != nil:
		rb.conn = compileSQL(path+".sql", *s.SQL, fail)
	default:
		rb.conn = compileMCP(path+".mcp", *s.MCP, fail)
	}
	switch {
	case len(s.Checks) == 0:
		fail(".checks", "at least one check is required")
	case len(s.Checks) > maxChecks:
		fail(".checks", "%d checks, at most %d", len(s.Checks), maxChecks)
	}
	seen := map[string]bool{}
	for i, c := range s.Checks {
		key := fmt.Sprintf(".checks[%d]", i)
		switch {
		case len(c.Code) > maxNameLen || !codeRE.MatchString(c.Code):
			fail(key+".code", "%q is not an upper-case code of at most %d characters (A-Z, 0-9, _)", c.Code, maxNameLen)
		case seen[c.Code]:
			fail(key+".code", "%q is declared twice", c.Code)
		}
		seen[c.Code] = true
		prg, err := readbackEnv.Compile(c.Expression, expr.Bool)
		if err != nil {
			fail(key+".expression", "%v", err)
			continue
		}
		rb.checks = append(rb.checks, check{code: c.Code, prg: prg})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rb, nil
}

// compileSQL checks an SQL connector's names and prepares its query.
func compileSQL(path string, s SQL, fail func(key, format string, args ...any)) *sqlConn {
	if s.Database == "" {
		fail(path+".database", "is required")
	}
	if err := sqldb.CheckIdent(s.Table); err != nil {
		fail(path+".table", "%v", err)
	}
	if err := sqldb.CheckIdent(s.KeyColumn); err != nil {
		fail(path+".key_column", "%v", err)
	}
	switch {
	case len(s.Columns) == 0:
		fail(path+".columns", "at least one column is required")
	case len(s.Columns) > maxColumns:
		fail(path+".columns", "%d columns, at most %d", len(s.Columns), maxColumns)
	}
	seen := map[string]bool{}
	for i, c := range s.Columns {
		key := fmt.Sprintf("%s.columns[%d]", path, i)
		if err := sqldb.CheckIdent(c); err != nil {
			fail(key, "%v", err)
		} else if seen[c] {
			fail(key, "%q is declared twice", c)
		}
		seen[c] = true
	}
	return &sqlConn{path: path, spec: s}
}

// compileMCP checks an MCP connector and compiles its mappings.
func compileMCP(path string, s MCP, fail func(key, format string, args ...any)) *mcpConn {
	if err := s.Server.Validate(); err != nil {
		fail(path+".server", "%v", err)
	}
	if s.Tool == "" || len(s.Tool) > maxNameLen {
		fail(path+".tool", "is required (at most %d characters)", maxNameLen)
	}
	if len(s.Arguments) > maxArguments {
		fail(path+".arguments", "%d arguments, at most %d", len(s.Arguments), maxArguments)
	}
	c := &mcpConn{path: path, spec: s}
	for _, name := range slices.Sorted(maps.Keys(s.Arguments)) {
		key := path + ".arguments." + name
		if len(name) > maxNameLen || !argRE.MatchString(name) {
			fail(key, "the argument name must be a plain name of at most %d characters", maxNameLen)
			continue
		}
		prg, err := mappingEnv.Compile(s.Arguments[name], expr.Scalar)
		if err != nil {
			fail(key, "%v", err)
			continue
		}
		c.args = append(c.args, argument{name: name, prg: prg})
	}
	if s.Rows != "" {
		prg, err := readbackEnv.Compile(s.Rows, expr.List)
		if err != nil {
			fail(path+".rows", "%v", err)
		}
		c.rows = prg
	}
	return c
}
