package action

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Defaults applied by [LoadConfig] to unset keys.
const (
	DefaultIdentity            = "action"
	DefaultKernelKey           = "kernel"
	DefaultRecordSweepInterval = 5 * time.Second
	// DefaultExecutorTimeout bounds one call of an http or mcp executor
	// when its timeout is unset.
	DefaultExecutorTimeout = 10 * time.Second
)

// Config is the action adapter's YAML configuration: the keys every
// service has (listen is the ActionService listener) and its own. Relative
// paths are relative to the working directory.
type Config struct {
	service.Config `json:",inline"`
	// KernelKey is the key id (and PKI name) of the kernel's
	// capability-signing key.
	KernelKey string `json:"kernel_key"`
	// Database holds the adapter's own durable table of idempotency
	// keys, which the adapter creates: an SQLite file (a path or
	// sqlite:PATH) or a postgres:// URL, which several adapters may share.
	Database string `json:"database"`
	// Durability is how the adapter's commits to its read-write databases
	// (the key table, sql executors' tables) reach the disk, as the
	// kernel's durability: full (default) waits for the disk at every
	// commit; at normal an effect and its key survive a crash of the
	// adapter, not a power loss of its machine or database server.
	Durability sqldb.Durability `json:"durability"`
	// StateChecks maps a source name, as capabilities name it in their
	// record ("source/key"), to a read-only connector giving the record's
	// state version now: a first execution is refused when it differs
	// from the capability's. Optional.
	StateChecks map[string]StateCheckConfig `json:"state_checks"`
	// Executors maps a tool name to the executor that performs its
	// effect.
	Executors map[string]ExecutorConfig `json:"executors"`
	// RecordSweepInterval is how often effect receipts the kernel has not
	// logged yet are sent again.
	RecordSweepInterval config.Duration `json:"record_sweep_interval"`
}

// StateCheckConfig is the connector of one state check: exactly one of
// sql and mcp.
type StateCheckConfig struct {
	SQL *SQLStateCheck `json:"sql,omitempty"`
	MCP *MCPStateCheck `json:"mcp,omitempty"`
}

// MCPStateCheck calls a read-only tool of an upstream MCP server with
// {key_argument: key}, as the evidence adapter reads the same source: the
// tool's JSON object result is the record, a JSON null result means there
// is none, and an error result or a failed call leaves the state unknown.
type MCPStateCheck struct {
	// Server is how to reach the server.
	Server mcpconn.Config `json:"server"`
	// Tool is the read-only tool called.
	Tool string `json:"tool"`
	// KeyArgument is the argument the record key is passed as.
	KeyArgument string `json:"key_argument"`
	// StateVersion is a CEL expression over `record` (the tool's result)
	// giving the state version, as the evidence adapter declares it for
	// the same source.
	StateVersion string `json:"state_version"`
	// Timeout bounds one call (default [DefaultExecutorTimeout]).
	Timeout config.Duration `json:"timeout,omitempty"`
}

// SQLStateCheck reads one row of a table, opened read-only.
type SQLStateCheck struct {
	// Database is an SQLite file (a path or sqlite:PATH) or a
	// postgres:// URL; it is opened read-only.
	Database string `json:"database"`
	// Table is the table read.
	Table string `json:"table"`
	// Key is the column the record key is matched against.
	Key string `json:"key"`
	// StateVersion is a CEL expression over `record` (the declared
	// columns) giving the state version, as the evidence adapter declares
	// it for the same source.
	StateVersion string `json:"state_version"`
	// Columns are the columns read: all the expression needs.
	Columns []string `json:"columns"`
}

// ExecutorConfig is one tool's executor: exactly one connector.
type ExecutorConfig struct {
	SQL  *SQLExecutor  `json:"sql,omitempty"`
	HTTP *HTTPExecutor `json:"http,omitempty"`
	MCP  *MCPExecutor  `json:"mcp,omitempty"`
}

// SQLExecutor inserts one row per effect into a table.
type SQLExecutor struct {
	// Database is an SQLite file (a path or sqlite:PATH) or a
	// postgres:// URL, opened read-write. When it is the adapter's own
	// database, the effect's row and the key's row are written in one
	// transaction.
	Database string `json:"database"`
	// Table is the table written.
	Table string `json:"table"`
	// KeyColumn receives the idempotency key. It must be UNIQUE in the
	// table, so that the table itself refuses a second row for a key.
	KeyColumn string `json:"key_column"`
	// Columns maps each other column written to a CEL expression over
	// args, call and effect giving its value (a bool, number or string).
	Columns map[string]string `json:"columns"`
	// RecordRef, when set, is a CEL expression over args, call, effect
	// and result (the row as written) giving the effect's reference in the
	// receipt; unset, the reference is effect.id.
	RecordRef string `json:"record_ref,omitempty"`
}

// HTTPExecutor POSTs one JSON request per effect, with the idempotency
// key in the Idempotency-Key header; the target must deduplicate on it.
// A 2xx reply is the effect done. Another 4xx is the target's refusal
// (TARGET_REFUSED), which closes the commitment as REFUSED, except: 409,
// refused but not closed, since it may answer another attempt under the
// key; and 408, 425 and 429, which, like 5xx and a lost reply, are
// Unavailable. After those a retry sends the same request and key.
type HTTPExecutor struct {
	// URL is the http(s) URL posted to.
	URL string `json:"url"`
	// Body maps each field of the JSON object sent to a CEL expression
	// over args, call and effect. Empty: the call's arguments are sent.
	Body map[string]string `json:"body,omitempty"`
	// RecordRef, when set, is a CEL expression over args, call, effect and
	// result (the JSON object replied) giving the effect's reference;
	// unset, the reference is effect.id.
	RecordRef string `json:"record_ref,omitempty"`
	// Timeout bounds one request (default [DefaultExecutorTimeout]).
	Timeout config.Duration `json:"timeout,omitempty"`
}

// MCPExecutor calls one tool of an upstream MCP server per effect.
type MCPExecutor struct {
	// Server is how to reach the server.
	Server mcpconn.Config `json:"server"`
	// Tool is the upstream tool called.
	Tool string `json:"tool"`
	// Arguments maps each argument of the upstream call to a CEL
	// expression over args, call and effect. An argument mapped to exactly
	// effect.idempotency_key makes the tool idempotent for this adapter:
	// an attempt left in doubt by a crash is called again with the same
	// key; otherwise it is never called twice.
	Arguments map[string]string `json:"arguments"`
	// RecordRef, when set, is a CEL expression over args, call, effect and
	// result (the tool's JSON object result) giving the effect's
	// reference; unset, the reference is effect.id.
	RecordRef string `json:"record_ref,omitempty"`
	// Timeout bounds one call (default [DefaultExecutorTimeout]).
	Timeout config.Duration `json:"timeout,omitempty"`
}

// LoadConfig reads path strictly, applies defaults and validates.
func LoadConfig(path string) (Config, error) { return config.LoadAs[Config](path) }

// ApplyDefaults fills unset keys with their defaults.
func (c *Config) ApplyDefaults() {
	c.Config.ApplyDefaults(DefaultIdentity)
	if c.KernelKey == "" {
		c.KernelKey = DefaultKernelKey
	}
	if c.Durability == "" {
		c.Durability = sqldb.DurabilityFull
	}
	if c.RecordSweepInterval <= 0 {
		c.RecordSweepInterval = config.Duration(DefaultRecordSweepInterval)
	}
}

// Validate reports every problem of c at once, each naming its key path
// (e.g. "executors.notify.http.url"). What needs a database itself (a
// table's columns and unique keys) is checked when it is opened
// ([OpenExecutors], [OpenStateChecks]).
func (c *Config) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.Database == "" {
		errs = append(errs, errors.New("database is required"))
	}
	if err := c.Durability.Check(); err != nil {
		errs = append(errs, err)
	}
	if len(c.Executors) == 0 {
		errs = append(errs, errors.New("executors: at least one executor is required"))
	}
	for _, name := range sortedKeys(c.Executors) {
		_, err := c.Executors[name].compile("executors."+name, name)
		errs = append(errs, err)
	}
	for _, name := range sortedKeys(c.StateChecks) {
		_, err := c.StateChecks[name].compile("state_checks."+name, name)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// toolName is the shape of a tool name in a contract's ToolGrant.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// compiled is an executor's configuration with its expressions compiled.
type compiled struct {
	sql  *SQLExecutor
	http *HTTPExecutor
	mcp  *MCPExecutor
	// mapped are the column, body or argument expressions by name.
	mapped map[string]*expr.Program
	// recordRef is nil when unset.
	recordRef *expr.Program
	// keyed: the mcp tool receives the idempotency key.
	keyed bool
	// url is the parsed http URL.
	url *url.URL
}

// The environments of the configuration's expressions; they are built
// when a configuration is loaded, not per request.
func mappingEnv() *expr.Env { return expr.MustEnv(expr.Mapping) }
func replyEnv() *expr.Env   { return expr.MustEnv(expr.Reply) }
func recordEnv() *expr.Env  { return expr.MustEnv(expr.Record) }

// compile checks e and compiles its expressions; every problem is named
// by its key path under path.
func (e ExecutorConfig) compile(path, tool string) (*compiled, error) {
	var errs []error
	if !toolName.MatchString(tool) {
		errs = append(errs, fmt.Errorf("%s: a tool name has 1 to 128 letters, digits, '_', '.' or '-'", path))
	}
	n := 0
	for _, set := range []bool{e.SQL != nil, e.HTTP != nil, e.MCP != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, errors.Join(append(errs, fmt.Errorf("%s: give exactly one executor: sql, http or mcp (%d given)", path, n))...)
	}
	out := &compiled{sql: e.SQL, http: e.HTTP, mcp: e.MCP}
	var recordRef string
	switch {
	case e.SQL != nil:
		p := path + ".sql"
		s := e.SQL
		if s.Database == "" {
			errs = append(errs, fmt.Errorf("%s.database is required", p))
		}
		for key, v := range map[string]string{"table": s.Table, "key_column": s.KeyColumn} {
			if err := sqldb.CheckIdent(v); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", p, key, err))
			}
		}
		if len(s.Columns) == 0 {
			errs = append(errs, fmt.Errorf("%s.columns: at least one column is required", p))
		}
		for _, col := range sortedKeys(s.Columns) {
			if err := sqldb.CheckIdent(col); err != nil {
				errs = append(errs, fmt.Errorf("%s.columns.%s: %w", p, col, err))
			}
			if col == s.KeyColumn {
				errs = append(errs, fmt.Errorf("%s.columns.%s: the key column receives the idempotency key; it is not mapped", p, col))
			}
		}
		out.mapped, errs = compileMap(p+".columns", s.Columns, expr.Scalar, errs)
		recordRef = s.RecordRef
		path = p
	case e.HTTP != nil:
		p := path + ".http"
		h := e.HTTP
		u, err := checkURL(h.URL)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.url: %w", p, err))
		}
		out.url = u
		out.mapped, errs = compileMap(p+".body", h.Body, expr.Plain, errs)
		recordRef = h.RecordRef
		path = p
	default:
		p := path + ".mcp"
		m := e.MCP
		if err := m.Server.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s.server: %w", p, err))
		}
		if m.Tool == "" {
			errs = append(errs, fmt.Errorf("%s.tool is required", p))
		}
		out.mapped, errs = compileMap(p+".arguments", m.Arguments, expr.Plain, errs)
		for _, src := range m.Arguments {
			if strings.Join(strings.Fields(src), "") == "effect.idempotency_key" {
				out.keyed = true
			}
		}
		recordRef = m.RecordRef
		path = p
	}
	if recordRef != "" {
		prg, err := replyEnv().Compile(recordRef, expr.Scalar)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.record_ref: %w", path, err))
		}
		out.recordRef = prg
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// compileMap compiles each expression of m in the mapping environment.
func compileMap(path string, m map[string]string, want expr.Result, errs []error) (map[string]*expr.Program, []error) {
	out := make(map[string]*expr.Program, len(m))
	env := mappingEnv()
	for _, name := range sortedKeys(m) {
		if name == "" {
			errs = append(errs, fmt.Errorf("%s: an empty name", path))
			continue
		}
		prg, err := env.Compile(m[name], want)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", path, name, err))
			continue
		}
		out[name] = prg
	}
	return out, errs
}

// checkURL accepts an absolute http(s) URL with a host and without
// credentials (they would be logged with the URL).
func checkURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("is required")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a URL", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q is not an http or https URL", raw)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%q names no host", raw)
	case u.User != nil:
		return nil, errors.New("a URL with credentials is refused")
	case u.Fragment != "":
		return nil, fmt.Errorf("%q has a fragment", raw)
	}
	return u, nil
}

// compiledCheck is a state check's configuration with its expression
// compiled: sql or mcp.
type compiledCheck struct {
	sql     *SQLStateCheck
	mcp     *MCPStateCheck
	version *expr.Program
}

func (s StateCheckConfig) compile(path, source string) (*compiledCheck, error) {
	var errs []error
	if source == "" || strings.Contains(source, "/") {
		// Records are named "source/key" throughout.
		errs = append(errs, fmt.Errorf("%s: a source name is not empty and has no '/'", path))
	}
	switch {
	case s.SQL != nil && s.MCP != nil:
		return nil, errors.Join(append(errs, fmt.Errorf("%s: give exactly one of sql and mcp, not both", path))...)
	case s.MCP != nil:
		return s.compileMCP(path, errs)
	case s.SQL == nil:
		return nil, errors.Join(append(errs, fmt.Errorf("%s.sql or %s.mcp is required", path, path))...)
	}
	p := path + ".sql"
	q := s.SQL
	if q.Database == "" {
		errs = append(errs, fmt.Errorf("%s.database is required", p))
	}
	for key, v := range map[string]string{"table": q.Table, "key": q.Key} {
		if err := sqldb.CheckIdent(v); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", p, key, err))
		}
	}
	if len(q.Columns) == 0 {
		errs = append(errs, fmt.Errorf("%s.columns: at least one column is required", p))
	}
	for i, c := range q.Columns {
		if err := sqldb.CheckIdent(c); err != nil {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: %w", p, i, err))
		}
		if slices.Index(q.Columns, c) != i {
			errs = append(errs, fmt.Errorf("%s.columns[%d]: %q is repeated", p, i, c))
		}
	}
	version, err := recordEnv().Compile(q.StateVersion, expr.Scalar)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s.state_version: %w", p, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &compiledCheck{sql: q, version: version}, nil
}

func (s StateCheckConfig) compileMCP(path string, errs []error) (*compiledCheck, error) {
	p := path + ".mcp"
	q := s.MCP
	if err := q.Server.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s.server: %w", p, err))
	}
	if q.Tool == "" {
		errs = append(errs, fmt.Errorf("%s.tool is required", p))
	}
	if q.KeyArgument == "" {
		errs = append(errs, fmt.Errorf("%s.key_argument is required", p))
	}
	if q.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%s.timeout must not be negative", p))
	}
	version, err := recordEnv().Compile(q.StateVersion, expr.Scalar)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s.state_version: %w", p, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &compiledCheck{mcp: q, version: version}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
