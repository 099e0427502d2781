package action

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// StateCheck reads a record's state version now, from the source's
// system of record: a table opened read-only, or a read-only tool of an
// upstream MCP server. It is safe for concurrent use.
type StateCheck struct {
	version *expr.Program

	// sql: the table, read by key.
	table *sqldb.KeyedTable

	// mcp: the tool is called with {keyArg: key}.
	mcp *mcpStateReader
}

// openStateCheck opens the check's connector: an sql check's database,
// read-only, checking that the table has the key and every column (an
// mcp check's server is dialled at its first call, so that a server that
// is down does not stop the adapter's start); errors name their key path
// under path.
func openStateCheck(ctx context.Context, path string, c *compiledCheck) (*StateCheck, error) {
	if c.mcp != nil {
		return &StateCheck{version: c.version, mcp: &mcpStateReader{
			server: c.mcp.Server, tool: c.mcp.Tool, keyArg: c.mcp.KeyArgument, timeout: c.mcp.Timeout.D(DefaultExecutorTimeout),
		}}, nil
	}
	table, err := sqldb.OpenKeyedTable(ctx, path+".sql", c.sql.Database, c.sql.Table, c.sql.Key, c.sql.Columns)
	if err != nil {
		return nil, err
	}
	return &StateCheck{table: table, version: c.version}, nil
}

// Version returns the state version of the record with key; found is
// false when there is none. Any failure to read or compute it is an
// error: a check never passes by default.
func (s *StateCheck) Version(ctx context.Context, key string) (version string, found bool, err error) {
	var record map[string]any
	if s.mcp != nil {
		record, err = s.mcp.record(ctx, key)
	} else {
		record, err = s.row(ctx, key)
	}
	if err != nil || record == nil {
		return "", false, err
	}
	v, err := s.version.Value(expr.Vars{"record": record})
	if err != nil {
		return "", false, fmt.Errorf("state version %q does not evaluate on this record", s.version)
	}
	version, ok := sqldb.Text(v)
	if !ok || version == "" {
		return "", false, fmt.Errorf("state version %q yields an empty value or a %T", s.version, v)
	}
	return version, true, nil
}

// row reads the declared columns of the row with key; nil when there is
// none.
func (s *StateCheck) row(ctx context.Context, key string) (map[string]any, error) {
	record, err := s.table.Row(ctx, key)
	for col, v := range record {
		record[col] = plainSQL(v)
	}
	return record, err
}

// Check reads the table of an sql check; for an mcp check it reports the
// last call's connection failure, if any, the server having no cheaper
// probe than a call.
func (s *StateCheck) Check(ctx context.Context) error {
	if s.mcp != nil {
		return s.mcp.check()
	}
	return s.table.Check(ctx)
}

// Close closes the database, or ends the session.
func (s *StateCheck) Close() error {
	if s.mcp != nil {
		return s.mcp.close()
	}
	return s.table.Close()
}

// mcpStateReader reads a record through a read-only MCP tool.
type mcpStateReader struct {
	server  mcpconn.Config
	tool    string
	keyArg  string
	timeout time.Duration

	mu      sync.Mutex
	session *mcpconn.Session
	// broken is the last call's connection failure, nil once a call got
	// an answer.
	broken error
}

// record calls the tool for key: its JSON object result, or nil for a
// JSON null result (no such record). An error result says nothing about
// the record, so it is an error, as is a call that failed.
func (m *mcpStateReader) record(ctx context.Context, key string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	s, err := m.connect(ctx)
	if err != nil {
		m.note(err)
		return nil, err
	}
	raw, err := s.Call(ctx, m.tool, map[string]any{m.keyArg: key})
	m.note(err)
	if err != nil {
		return nil, err
	}
	// Strict decoding: a result with a repeated key names no one value.
	v, err := toolcall.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", m.tool, err)
	}
	if v == nil {
		return nil, nil
	}
	obj, ok := toolcall.Native(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tool %s answered a %T, not a JSON object", m.tool, v)
	}
	return obj, nil
}

func (m *mcpStateReader) connect(ctx context.Context) (*mcpconn.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.session != nil {
		return m.session, nil
	}
	s, err := mcpconn.Dial(ctx, m.server, stateCheckClient)
	if err != nil {
		return nil, err
	}
	m.session = s
	return s, nil
}

func (m *mcpStateReader) note(err error) {
	if errors.Is(err, mcpconn.ErrTool) {
		err = nil // the server answered
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.broken = err
}

func (m *mcpStateReader) check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.broken
}

func (m *mcpStateReader) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.session == nil {
		return nil
	}
	err := m.session.Close()
	m.session = nil
	return err
}

// stateCheckClient is how the adapter names itself to the servers its
// state checks call.
const stateCheckClient = "ambit-action-state-check"
