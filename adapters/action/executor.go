package action

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// Input is what an executor's mappings read for one call: the CEL
// variables args (the call's arguments), call (tool, destination, record,
// state_version) and effect (id, idempotency_key, capability_id,
// task_id).
type Input struct {
	Args   map[string]any
	Call   map[string]any
	Effect map[string]any
	// ArgsJSON is the call's canonical arguments, the default body of an
	// http executor.
	ArgsJSON string
	// Key is the idempotency key, EffectID the effect's own id.
	Key, EffectID string
}

func (in Input) vars() expr.Vars {
	return expr.Vars{"args": in.Args, "call": in.Call, "effect": in.Effect}
}

// newInput builds the input of call under the capability's terms.
func newInput(call *toolcall.Call, destination, record, stateVersion, key, effectID, capabilityID, taskID string) Input {
	args, _ := toolcall.Native(call.Args).(map[string]any)
	return Input{
		Args: args,
		Call: map[string]any{
			"tool": call.Tool, "destination": destination, "record": record, "state_version": stateVersion,
		},
		Effect: map[string]any{
			"id": effectID, "idempotency_key": key, "capability_id": capabilityID, "task_id": taskID,
		},
		ArgsJSON: call.Canonical(),
		Key:      key,
		EffectID: effectID,
	}
}

// Executor performs one tool's effects on its target.
type Executor interface {
	// Kind names the connector ("sql", "http", "mcp"), for logs.
	Kind() string
	// Prepare evaluates the executor's mappings over one call: what the
	// target will be sent. Nothing is sent. A mapping that cannot be
	// evaluated is [ErrArguments].
	Prepare(in Input) (Effect, error)
}

// Effect is one prepared effect.
type Effect interface {
	// Do attempts the effect and returns its reference in the target
	// (the receipt's record_ref). A target that already holds this very
	// effect under the key is success. Errors wrap [ErrTargetUnavailable],
	// [ErrTargetRefused] or [ErrInDoubt], and errNothingDone when the
	// target certainly holds nothing of the attempt.
	Do(ctx context.Context) (string, error)
	// Resolve settles an attempt that started and never finished (a crash
	// or failure between the effect and its receipt): the target's unique
	// key decides (sql), the request is resent with the same key (http,
	// and mcp tools that take the key), or it is [ErrInDoubt] (other mcp
	// tools, which are never called twice).
	Resolve(ctx context.Context) (string, error)
}

// txEffect is an effect written to a database in a caller's transaction:
// when its database is the adapter's own, the effect's row and the key's
// row commit together.
type txEffect interface {
	Effect
	// DB is the database the effect is written to.
	DB() *sql.DB
	// DoTx is Do within tx.
	DoTx(ctx context.Context, tx *sql.Tx) (string, error)
}

// recordRef evaluates an executor's record_ref over the target's reply;
// without one the reference is the effect's own id. A reference that
// cannot be read leaves the effect in doubt: it may have happened.
func recordRef(prg *expr.Program, in Input, result map[string]any) (string, error) {
	if prg == nil {
		return in.EffectID, nil
	}
	v, err := prg.Value(expr.Vars{"args": in.Args, "call": in.Call, "effect": in.Effect, "result": result})
	if err != nil {
		return "", fmt.Errorf("%w: record_ref: %w", ErrInDoubt, err)
	}
	ref := fmt.Sprint(v)
	if ref == "" {
		return "", fmt.Errorf("%w: record_ref %s is empty", ErrInDoubt, prg)
	}
	return ref, nil
}

// plainMap evaluates each mapping to its plain value.
func plainMap(path string, mapped map[string]*expr.Program, in Input) (map[string]any, error) {
	out := make(map[string]any, len(mapped))
	for _, name := range sortedKeys(mapped) {
		v, err := mapped[name].Plain(in.vars())
		if err != nil {
			return nil, fmt.Errorf("%w (%s.%s: %v)", ErrArguments, path, name, err)
		}
		out[name] = v
	}
	return out, nil
}

// replyObject decodes a target's JSON reply as an object for record_ref.
func replyObject(raw []byte) (map[string]any, error) {
	v, err := toolcall.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: the reply is not JSON: %w", ErrInDoubt, err)
	}
	obj, ok := toolcall.Native(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the reply is not a JSON object", ErrInDoubt)
	}
	return obj, nil
}
