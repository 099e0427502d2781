package evidence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// clientName is how the adapter names itself to upstream MCP servers.
const clientName = "ambit-evidence"

// MCPConnector reads records by calling a read-only tool of an upstream
// MCP server with {key_argument: key}. The tool's JSON object result is
// the record; a JSON null result means there is no such record. An error
// result says nothing the adapter can rely on about the record, so it is
// [ErrSourceUnavailable]. It is safe for concurrent use.
type MCPConnector struct {
	sess    *mcpconn.Session
	tool    string
	keyArg  string
	columns []string
	shape   shape

	mu sync.Mutex
	// broken is the last call's connection failure, nil once a call got
	// an answer: the server has no cheaper probe than a call.
	broken error
}

var _ Connector = (*MCPConnector)(nil)

// OpenMCP connects to the source's server; errors name their key path
// under path (e.g. "sources.records_db.mcp").
func OpenMCP(ctx context.Context, path string, cfg MCPSource) (*MCPConnector, error) {
	if errs := cfg.validate(path); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	version, err := compileStateVersion(cfg.StateVersion, cfg.Columns)
	if err != nil {
		return nil, fmt.Errorf("%s.state_version: %w", path, err)
	}
	sess, err := mcpconn.Dial(ctx, cfg.Server, clientName)
	if err != nil {
		return nil, fmt.Errorf("%s.server: %w", path, err)
	}
	return &MCPConnector{
		sess:    sess,
		tool:    cfg.Tool,
		keyArg:  cfg.KeyArgument,
		columns: slices.Clone(cfg.Columns),
		shape:   shape{subject: cfg.Subject, stateVersion: version},
	}, nil
}

// Read calls the tool for key and keeps the declared fields of its result;
// a declared field the result lacks is null.
func (m *MCPConnector) Read(ctx context.Context, key string) (Record, error) {
	raw, err := m.sess.Call(ctx, m.tool, map[string]any{m.keyArg: key})
	if ctx.Err() == nil {
		m.note(err)
	}
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrSourceUnavailable, err)
	}
	// Strict decoding: a result with a repeated key names no one value.
	v, err := toolcall.Decode(raw)
	if err != nil {
		return Record{}, fmt.Errorf("%w: tool %s: %v", ErrSourceUnavailable, m.tool, err)
	}
	if v == nil {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	obj, ok := toolcall.Native(v).(map[string]any)
	if !ok {
		return Record{}, fmt.Errorf("%w: tool %s answered a %T, not a JSON object", ErrSourceUnavailable, m.tool, v)
	}
	values := make(map[string]any, len(m.columns))
	for _, c := range m.columns {
		values[c] = obj[c]
	}
	return m.shape.record(values)
}

func (m *MCPConnector) note(err error) {
	if errors.Is(err, mcpconn.ErrTool) {
		err = nil // the server answered
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.broken = err
}

// Check reports the last call's connection failure, if any; a later call
// that gets through clears it.
func (m *MCPConnector) Check(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.broken
}

// Columns are the declared result fields.
func (m *MCPConnector) Columns() []string { return m.columns }

// Close ends the session.
func (m *MCPConnector) Close() error { return m.sess.Close() }
