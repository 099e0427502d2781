package readback

import (
	"context"
	"errors"
	"fmt"
	"slices"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// Errors of a read, matched with errors.Is.
var (
	// ErrArguments marks a call its readback cannot be made for: the
	// capability's arguments do not parse, or a declared argument mapping
	// does not evaluate over them. Nothing was read.
	ErrArguments = errors.New("the call does not fit its readback")
	// ErrUnreadable marks a system of record that could not be read, or
	// answered with something that is not a result; nothing can be
	// concluded from it.
	ErrUnreadable = errors.New("readback source unreadable")
)

// MaxRows bounds the rows a reading holds. More rows than this under one
// key is itself a finding ([FindingRowsOverLimit]); the checks see the
// first MaxRows.
const MaxRows = 1000

// Findings of a reading itself, beside the declared check codes.
const (
	// FindingRowsUnevaluable: the declared rows expression did not
	// evaluate over the result to a list of objects; the checks see no
	// rows.
	FindingRowsUnevaluable = "rows:unevaluable"
	// FindingRowsOverLimit: more than [MaxRows] rows were found.
	FindingRowsOverLimit = "rows:over_limit"
)

// unevaluable is appended to a check's code when the check could not be
// evaluated.
const unevaluable = ":unevaluable"

// Readback is one tool's compiled readback with its open connector. It is
// safe for concurrent use.
type Readback struct {
	tool   string
	conn   connector
	checks []check
}

type check struct {
	code string
	prg  *expr.Program
}

// connector reads the system of record for an input.
type connector interface {
	open(ctx context.Context, client string) error
	read(ctx context.Context, in Input) (Reading, error)
	close() error
}

// Tool is the name of the tool the readback checks.
func (r *Readback) Tool() string { return r.tool }

// Input is what the expressions of a readback know about the effect to
// check: the granted call and the effect that was reported.
type Input struct {
	// Key is the effect's idempotency key, the capability's.
	Key string
	// Args are the call's canonical arguments as plain values
	// (toolcall.Native).
	Args map[string]any
	// Call is {tool, destination, record, state_version}.
	Call map[string]any
	// Effect is {id, idempotency_key, capability_id, task_id, record_ref}:
	// id is the effect receipt's id.
	Effect map[string]any
}

// Bind builds the input for a capability and its effect receipt. The
// arguments are read from the capability, the authority, never from the
// effect receipt. An unparsable call is ErrArguments.
func Bind(capability *receiptv1.Capability, effect *receiptv1.EffectReceipt) (Input, error) {
	call, err := toolcall.Parse(capability.GetCall().GetTool(), capability.GetCall().GetArgumentsJson())
	if err != nil {
		return Input{}, fmt.Errorf("%w: capability %s: %w", ErrArguments, capability.GetCapabilityId(), err)
	}
	args, _ := toolcall.Native(call.Args).(map[string]any) // Native keeps an object an object
	return Input{
		Key:  capability.GetIdempotencyKey(),
		Args: args,
		Call: map[string]any{
			"tool":          call.Tool,
			"destination":   capability.GetDestination(),
			"record":        capability.GetRecord(),
			"state_version": capability.GetStateVersion(),
		},
		Effect: map[string]any{
			"id":              effect.GetReceiptId(),
			"idempotency_key": capability.GetIdempotencyKey(),
			"capability_id":   capability.GetCapabilityId(),
			"task_id":         capability.GetTaskId(),
			"record_ref":      effect.GetRecordRef(),
		},
	}, nil
}

// vars are the variables of the Mapping environment.
func (in Input) vars() expr.Vars {
	return expr.Vars{"args": in.Args, "call": in.Call, "effect": in.Effect}
}

// Reading is what a readback read.
type Reading struct {
	// Rows are the rows found, each a map from field to value.
	Rows []map[string]any
	// Result is the object an MCP tool returned; empty for SQL.
	Result map[string]any
	// Findings are problems of the reading itself
	// ([FindingRowsUnevaluable], [FindingRowsOverLimit]).
	Findings []string
	// causes explain the findings, for the log.
	causes []error
}

// Read reads the system of record for in through the readback's own
// read-only connector. Its errors wrap ErrArguments (nothing was read) or
// ErrUnreadable (nothing can be concluded).
func (r *Readback) Read(ctx context.Context, in Input) (Reading, error) {
	return r.conn.read(ctx, in)
}

// Check evaluates every declared check over a reading, in declaration
// order, and returns every finding: the reading's own first, then the code
// of each check that does not hold, or the code followed by ":unevaluable"
// for one that cannot be evaluated. No finding means verified. causes are
// the evaluation errors, for the log. Check is a pure function of its
// inputs.
func (r *Readback) Check(in Input, rd Reading) (findings []string, causes []error) {
	rows := make([]any, len(rd.Rows))
	for i, row := range rd.Rows {
		rows[i] = row
	}
	result := rd.Result
	if result == nil {
		result = map[string]any{}
	}
	vars := in.vars()
	vars["rows"] = rows
	vars["result"] = result
	findings = slices.Clone(rd.Findings)
	causes = slices.Clone(rd.causes)
	// Every check is evaluated, so the receipt lists every discrepancy.
	for _, c := range r.checks {
		ok, err := c.prg.Bool(vars)
		switch {
		case err != nil:
			findings = append(findings, c.code+unevaluable)
			causes = append(causes, fmt.Errorf("check %s: %w", c.code, err))
		case !ok:
			findings = append(findings, c.code)
		}
	}
	return findings, causes
}
