package readback

import (
	"context"
	"fmt"

	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// mcpConn calls a read-only tool of an upstream MCP server.
type mcpConn struct {
	path string // key path of the declaration, for errors at open
	spec MCP
	args []argument    // in name order
	rows *expr.Program // nil: rows is the result alone
	sess *mcpconn.Session
}

type argument struct {
	name string
	prg  *expr.Program
}

var _ connector = (*mcpConn)(nil)

// open connects to the server, so that an unreachable one fails at start,
// naming its key path; a connection that breaks later is re-established by
// the next call.
func (c *mcpConn) open(ctx context.Context, client string) error {
	sess, err := mcpconn.Dial(ctx, c.spec.Server, client)
	if err != nil {
		return fmt.Errorf("%s.server: %w", c.path, err)
	}
	c.sess = sess
	return nil
}

func (c *mcpConn) read(ctx context.Context, in Input) (Reading, error) {
	vars := in.vars()
	args := make(map[string]any, len(c.args))
	for _, a := range c.args {
		v, err := a.prg.Value(vars)
		if err != nil {
			return Reading{}, fmt.Errorf("%w: arguments.%s: %w", ErrArguments, a.name, err)
		}
		args[a.name] = v
	}
	raw, err := c.sess.Call(ctx, c.spec.Tool, args)
	if err != nil {
		return Reading{}, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	// Strictly, as a call's arguments are read: exact numbers, no
	// duplicate keys.
	decoded, err := toolcall.Decode(raw)
	if err != nil {
		return Reading{}, fmt.Errorf("%w: %s: %w", ErrUnreadable, c.spec.Tool, err)
	}
	result, ok := toolcall.Native(decoded).(map[string]any)
	if !ok {
		return Reading{}, fmt.Errorf("%w: %s: the result is not a JSON object", ErrUnreadable, c.spec.Tool)
	}
	out := Reading{Result: result}
	if c.rows == nil {
		out.Rows = []map[string]any{result}
		return out, nil
	}
	vars["result"] = result
	list, err := c.rows.List(vars)
	if err != nil {
		out.Findings = append(out.Findings, FindingRowsUnevaluable)
		out.causes = append(out.causes, fmt.Errorf("rows: %w", err))
		return out, nil
	}
	for i, e := range list {
		row, ok := e.(map[string]any)
		if !ok {
			out.Rows = nil
			out.Findings = append(out.Findings, FindingRowsUnevaluable)
			out.causes = append(out.causes, fmt.Errorf("rows: element %d is not an object", i))
			return out, nil
		}
		out.Rows = append(out.Rows, row)
	}
	if len(out.Rows) > MaxRows {
		out.Rows = out.Rows[:MaxRows]
		out.Findings = append(out.Findings, FindingRowsOverLimit)
	}
	return out, nil
}

func (c *mcpConn) close() error {
	if c.sess == nil {
		return nil
	}
	return c.sess.Close()
}
