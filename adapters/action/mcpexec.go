package action

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
)

// mcpExecutor calls one tool of an upstream MCP server per effect. MCP has
// no idempotency of its own: unless the tool takes the idempotency key
// (keyed), an attempt that may have reached the tool is never made again.
type mcpExecutor struct {
	server    mcpconn.Config
	client    string
	tool      string
	arguments map[string]*expr.Program
	recordRef *expr.Program
	keyed     bool
	timeout   time.Duration

	// The session is dialled at the first call, so that a server that is
	// down does not stop the adapter's start; mu guards it.
	mu      sync.Mutex
	session *mcpconn.Session
}

var _ Executor = (*mcpExecutor)(nil)

func newMCPExecutor(c *compiled, client string) *mcpExecutor {
	return &mcpExecutor{
		server:    c.mcp.Server,
		client:    client,
		tool:      c.mcp.Tool,
		arguments: c.mapped,
		recordRef: c.recordRef,
		keyed:     c.keyed,
		timeout:   c.mcp.Timeout.D(DefaultExecutorTimeout),
	}
}

func (x *mcpExecutor) Kind() string { return "mcp" }

// Prepare evaluates the argument mappings.
func (x *mcpExecutor) Prepare(in Input) (Effect, error) {
	args, err := plainMap("arguments", x.arguments, in)
	if err != nil {
		return nil, err
	}
	return &mcpEffect{x: x, in: in, args: args}, nil
}

// connect returns the session, dialling it first if needed. A failure
// sent nothing to the tool.
func (x *mcpExecutor) connect(ctx context.Context) (*mcpconn.Session, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.session != nil {
		return x.session, nil
	}
	s, err := mcpconn.Dial(ctx, x.server, x.client)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: %w", ErrTargetUnavailable, errNothingDone, err)
	}
	x.session = s
	return s, nil
}

// Close ends the session.
func (x *mcpExecutor) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.session == nil {
		return nil
	}
	err := x.session.Close()
	x.session = nil
	return err
}

type mcpEffect struct {
	x    *mcpExecutor
	in   Input
	args map[string]any
}

// Do calls the tool once. An error result is the tool's refusal; a call
// that failed on the way may have reached the tool, so for a tool without
// the key it is in doubt at once.
func (e *mcpEffect) Do(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.x.timeout)
	defer cancel()
	s, err := e.x.connect(ctx)
	if err != nil {
		return "", err
	}
	raw, err := s.Call(ctx, e.x.tool, e.args)
	switch {
	case errors.Is(err, mcpconn.ErrTool):
		return "", fmt.Errorf("%w: %w", ErrTargetRefused, err)
	case err != nil && e.x.keyed:
		return "", fmt.Errorf("%w: %w", ErrTargetUnavailable, err)
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrInDoubt, err)
	}
	if e.x.recordRef == nil {
		return e.in.EffectID, nil
	}
	obj, err := replyObject(raw)
	if err != nil {
		return "", err
	}
	return recordRef(e.x.recordRef, e.in, obj)
}

// Resolve calls a tool that takes the key again; any other tool is in
// doubt and is not called.
func (e *mcpEffect) Resolve(ctx context.Context) (string, error) {
	if e.x.keyed {
		return e.Do(ctx)
	}
	return "", fmt.Errorf("%w: mcp tool %s takes no idempotency key", ErrInDoubt, e.x.tool)
}
