package action

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/ambitkernel/ambit/sdk/serve"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

// Kernel is the part of the kernel's AdapterService an execution needs.
// The generated kernelv1.AdapterServiceClient satisfies it.
type Kernel interface {
	RedeemCapability(ctx context.Context, in *kernelv1.RedeemCapabilityRequest, opts ...grpc.CallOption) (*kernelv1.RedeemCapabilityResponse, error)
	RecordEffect(ctx context.Context, in *kernelv1.RecordEffectRequest, opts ...grpc.CallOption) (*kernelv1.RecordEffectResponse, error)
	RecordRefusal(ctx context.Context, in *kernelv1.RecordRefusalRequest, opts ...grpc.CallOption) (*kernelv1.RecordRefusalResponse, error)
}

var _ Kernel = kernelv1.AdapterServiceClient(nil)

// Deps are what a [Core] needs. Now, NewID, StateChecks, AfterStart and
// AfterCommit may be nil.
type Deps struct {
	// Issuer issues the effect receipts with the adapter's key; its log
	// gets one line per effect.
	service.Issuer
	// KernelKeys holds the kernel's capability-signing key.
	KernelKeys envelope.Keyring
	// KernelKeyID is the key id capabilities must be signed with.
	KernelKeyID string
	// Kernel redeems capabilities and logs effect receipts.
	Kernel Kernel
	// KernelTimeout bounds each kernel call.
	KernelTimeout time.Duration
	// Keys is the adapter's durable table of idempotency keys.
	Keys *Keys
	// Executors maps a tool name to the executor of its effects.
	Executors map[string]Executor
	// StateChecks maps a source name to the check of its records' state
	// versions; a capability whose record lies in another source, or that
	// binds no state version, is not checked.
	StateChecks map[string]*StateCheck
	// AfterStart, when set, runs right after a key is written Started and
	// before its effect is attempted; see [FailpointAfterStart].
	AfterStart func()
	// AfterCommit, when set, runs right after an effect is committed at
	// its target and before anything else (its key is still Started, or,
	// for an sql executor sharing the adapter's database, Done in the same
	// transaction); see [FailpointAfterCommit].
	AfterCommit func()
}

// Core executes calls of declared tools. It is safe for concurrent use:
// the key table's primary key, not a lock here, keeps a key to one
// effect; the in-process lock per key only makes a retry racing its first
// attempt wait for it.
type Core struct {
	d     Deps
	locks keyLocks
	marks marks
}

// NewCore checks d and returns a Core.
func NewCore(d Deps) (*Core, error) {
	errs := []error{d.Issuer.Validate()}
	if _, ok := d.KernelKeys[d.KernelKeyID]; !ok || d.KernelKeyID == "" {
		errs = append(errs, fmt.Errorf("no kernel key %q", d.KernelKeyID))
	}
	if d.Kernel == nil {
		errs = append(errs, errors.New("no kernel client"))
	}
	if d.KernelTimeout <= 0 {
		errs = append(errs, errors.New("kernel timeout is not positive"))
	}
	if d.Keys == nil {
		errs = append(errs, errors.New("no idempotency key table"))
	}
	if len(d.Executors) == 0 {
		errs = append(errs, errors.New("no executors"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new action core: %w", err)
	}
	d.Issuer = d.Issuer.WithDefaults()
	return &Core{d: d, locks: keyLocks{held: map[string]chan struct{}{}}, marks: marks{signal: make(chan struct{}, 1)}}, nil
}

// attempt is one request being executed.
type attempt struct {
	caller     string
	req        *actionv1.ExecuteRequest
	capability *receiptv1.Capability
	call       *toolcall.Call
	executor   Executor
	log        *zap.Logger
}

func (a *attempt) key() string { return a.req.GetIdempotencyKey() }

// input is what the executor's mappings read, for the effect with id.
func (a *attempt) input(effectID string) Input {
	c := a.capability
	return newInput(a.call, c.GetDestination(), c.GetRecord(), c.GetStateVersion(), a.key(), effectID,
		c.GetCapabilityId(), c.GetTaskId())
}

func (a *attempt) entry(effectID string, now time.Time) Entry {
	return Entry{
		Key: a.key(), CapabilityID: a.capability.GetCapabilityId(), TaskID: a.capability.GetTaskId(),
		Tool: a.call.Tool, CallHash: a.call.Hash(), EffectID: effectID, StartedAt: now,
	}
}

// Execute performs one validated request (see [ValidateExecute]) for
// caller. See the package documentation for the order of its steps.
func (c *Core) Execute(ctx context.Context, caller string, req *actionv1.ExecuteRequest) (*actionv1.ExecuteResponse, error) {
	log := c.d.Log.With(zap.String("caller", caller), zap.String("idempotency_key", req.GetIdempotencyKey()))
	resp, err := c.execute(ctx, caller, req, log)
	if err != nil {
		st := status.Convert(statuses().Status(err))
		log.Info("effect refused", zap.String("code", st.Code().String()), zap.String("reason", serve.Reason(st.Err()).String()), zap.Error(err))
		return nil, err
	}
	return resp, nil
}

func (c *Core) execute(ctx context.Context, caller string, req *actionv1.ExecuteRequest, log *zap.Logger) (*actionv1.ExecuteResponse, error) {
	// The capability must verify before anything in it is believed.
	var capability receiptv1.Capability
	if err := c.d.KernelKeys.Open(req.GetCapability(), c.d.KernelKeyID, &capability); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCapabilityInvalid, err)
	}
	// A capability is not a bearer token: only the agent it was issued to
	// may present it.
	if capability.GetHolder() != caller {
		return nil, ErrNotHolder
	}
	log = log.With(zap.String("capability_id", capability.GetCapabilityId()), zap.String("task_id", capability.GetTaskId()),
		zap.String("tool", capability.GetCall().GetTool()))
	if req.GetIdempotencyKey() != capability.GetIdempotencyKey() {
		return nil, ErrKeyMismatch
	}
	// The adapter executes exactly the call the capability binds; the
	// request carries nothing else that could change it.
	call, err := toolcall.Parse(capability.GetCall().GetTool(), capability.GetCall().GetArgumentsJson())
	if err != nil {
		return nil, fmt.Errorf("%w: its call: %w", ErrCapabilityInvalid, err)
	}
	executor, ok := c.d.Executors[call.Tool]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrNoExecutor, call.Tool)
	}
	a := &attempt{caller: caller, req: req, capability: &capability, call: call, executor: executor, log: log}
	unlock, err := c.locks.lock(ctx, a.key())
	if err != nil {
		return nil, err
	}
	defer unlock()
	entry, found, err := c.d.Keys.Get(ctx, a.key())
	if err != nil {
		return nil, err
	}
	if !found {
		return c.first(ctx, a)
	}
	if entry.CallHash != call.Hash() || entry.CapabilityID != capability.GetCapabilityId() {
		return nil, ErrKeyReused
	}
	// A retry is redeemed too: the kernel is asked every time, so a
	// capability it has closed or revoked is refused even when the effect
	// exists.
	first, err := c.redeem(ctx, a)
	if err != nil {
		return nil, err
	}
	if first {
		// The kernel thinks nothing was executed under this capability
		// yet the key has an attempt (e.g. the kernel's store was reset).
		// The attempt stands and is not repeated; say so once.
		log.Warn("kernel answered a first redemption for a key that has an attempt", zap.Stringer("state", entry.State))
	}
	return c.settle(ctx, a, entry, first)
}

// first is the first attempt at a key.
func (c *Core) first(ctx context.Context, a *attempt) (*actionv1.ExecuteResponse, error) {
	effectID := "eff-" + c.d.NewID()
	// Every mapping is evaluated before anything is redeemed or sent: a
	// call the executor cannot map spends nothing.
	effect, err := a.executor.Prepare(a.input(effectID))
	if err != nil {
		return nil, err
	}
	// The state check matters only for a first attempt: a retry must
	// still settle the effect that may have happened. Expiry is not
	// checked here: it bounds the first redemption, and only the kernel
	// knows whether this one is the first. A key without a row may belong
	// to a capability the kernel redeemed already (an attempt that died
	// between the redemption and its key's first write, or whose target
	// certainly did nothing): the kernel answers that as a retry, to be
	// carried out, and refuses an expired capability it never redeemed.
	if err := c.checkState(ctx, a.capability); err != nil {
		return nil, err
	}
	first, err := c.redeem(ctx, a)
	if err != nil {
		return nil, err
	}
	// From here the effect is under way: finish it even if the caller
	// goes away.
	ctx = context.WithoutCancel(ctx)
	entry := a.entry(effectID, c.d.Now().UTC())
	if te, ok := effect.(txEffect); ok && te.DB() == c.d.Keys.DB() {
		return c.doAtomic(ctx, a, te, entry, first)
	}
	if err := c.d.Keys.Start(ctx, entry); err != nil {
		if errors.Is(err, ErrKeyTaken) {
			// Another process started the key since it was read.
			return c.settleTaken(ctx, a, first)
		}
		return nil, err
	}
	if c.d.AfterStart != nil {
		c.d.AfterStart()
	}
	ref, err := effect.Do(ctx)
	if err != nil {
		return nil, c.failed(ctx, a, entry, true, err)
	}
	return c.finish(ctx, a, entry, ref, first)
}

// doAtomic writes the effect's row and the key's Done row, with the
// signed receipt, in one transaction of the shared database.
func (c *Core) doAtomic(ctx context.Context, a *attempt, te txEffect, entry Entry, first bool) (*actionv1.ExecuteResponse, error) {
	err := c.d.Keys.Tx(ctx, func(tx *sql.Tx) error {
		ref, err := te.DoTx(ctx, tx)
		if err != nil {
			return err
		}
		if entry.Receipt, err = c.sign(a, entry.EffectID, ref); err != nil {
			return err
		}
		return c.d.Keys.StartDone(ctx, tx, entry, entry.Receipt)
	})
	if errors.Is(err, ErrKeyTaken) {
		return c.settleTaken(ctx, a, first)
	}
	if err != nil {
		// The transaction rolled back: there is no attempt to remove. But
		// another process may have committed this key's effect and key
		// meanwhile, its row at the target being why ours was refused:
		// then its receipt is the answer.
		if _, found, gerr := c.d.Keys.Get(ctx, a.key()); gerr == nil && found {
			return c.settleTaken(ctx, a, first)
		}
		return nil, c.failed(ctx, a, entry, false, err)
	}
	if c.d.AfterCommit != nil {
		c.d.AfterCommit()
	}
	entry.State = Done
	return c.answer(ctx, a, entry, false, first)
}

// settleTaken settles a key another process wrote since it was read.
func (c *Core) settleTaken(ctx context.Context, a *attempt, first bool) (*actionv1.ExecuteResponse, error) {
	entry, found, err := c.d.Keys.Get(ctx, a.key())
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("idempotency key %q is taken but has no row", a.key())
	}
	if entry.CallHash != a.call.Hash() || entry.CapabilityID != a.capability.GetCapabilityId() {
		return nil, ErrKeyReused
	}
	return c.settle(ctx, a, entry, first)
}

// settle answers a key that has an attempt: Done returns its receipt;
// Started is resolved by the executor's target (see [Effect.Resolve]).
func (c *Core) settle(ctx context.Context, a *attempt, entry Entry, first bool) (*actionv1.ExecuteResponse, error) {
	if entry.Refused() {
		return nil, c.refused(ctx, a, entry)
	}
	if entry.State == Done {
		return c.answer(ctx, a, entry, true, first)
	}
	effect, err := a.executor.Prepare(a.input(entry.EffectID))
	if err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	ref, err := effect.Resolve(ctx)
	if err != nil {
		return nil, c.failed(ctx, a, entry, true, err)
	}
	return c.finish(ctx, a, entry, ref, first)
}

// failed handles an attempt that did not complete; started says whether
// the key has a Started row for it (entry). A target that refused the
// effect and certainly holds nothing of it settles the key (see refuse).
// Otherwise, when the target certainly holds nothing of the attempt, its
// Started row is removed so that a retry is a first attempt again; an
// effect in doubt is logged, since only the verifier's readback can now
// tell whether it happened.
func (c *Core) failed(ctx context.Context, a *attempt, entry Entry, started bool, err error) error {
	switch {
	case errors.Is(err, ErrInDoubt):
		a.log.Warn("effect in doubt: not attempted again", zap.String("executor", a.executor.Kind()), zap.Error(err))
	case errors.Is(err, ErrTargetRefused) && errors.Is(err, errNothingDone):
		c.refuse(ctx, a, entry, started, err)
	case errors.Is(err, errNothingDone) && started:
		if aerr := c.d.Keys.Abandon(ctx, a.key(), entry.EffectID); aerr != nil {
			a.log.Warn("abandon attempt", zap.Error(aerr))
		}
	}
	return err
}

// refuse settles an attempt whose target refused the effect and holds
// nothing of it: the key is written Done with a signed refusal receipt,
// so that no attempt at it is made again, and the kernel closes the
// commitment as REFUSED, which no longer counts against the task: the
// agent may propose the effect again. A key another attempt settled
// first keeps that settlement; a refusal the kernel could not log now,
// the sweep sends it later.
func (c *Core) refuse(ctx context.Context, a *attempt, entry Entry, started bool, cause error) {
	env, err := c.d.Signer.Sign(&receiptv1.RefusalReceipt{
		ReceiptId:      entry.EffectID,
		CapabilityId:   a.capability.GetCapabilityId(),
		TaskId:         a.capability.GetTaskId(),
		IdempotencyKey: a.key(),
		Call:           a.capability.GetCall(),
		Reason:         strings.TrimPrefix(strings.TrimPrefix(cause.Error(), ErrTargetRefused.Error()+": "), errNothingDone.Error()+": "),
		RefusedAt:      timestamppb.New(c.d.Now().UTC()),
		Issuer:         c.d.Identity,
	})
	if err == nil && started {
		err = c.d.Keys.Finish(ctx, a.key(), env)
	} else if err == nil {
		err = c.d.Keys.Settle(ctx, entry, env)
	}
	if err != nil {
		a.log.Warn("refusal not kept", zap.String("receipt_id", entry.EffectID), zap.Error(err))
		return
	}
	entry.State, entry.Receipt = Done, env
	if _, err := c.record(ctx, entry); err != nil {
		a.log.Warn("refusal not recorded", zap.String("receipt_id", entry.EffectID), zap.Error(err))
	}
}

// refused answers a key its target refused: the kernel logs the refusal
// if it has not, and the answer is the refusal, again.
func (c *Core) refused(ctx context.Context, a *attempt, entry Entry) error {
	if _, err := c.record(ctx, entry); err != nil {
		a.log.Warn("refusal not recorded", zap.String("receipt_id", entry.EffectID), zap.Error(err))
	}
	var r receiptv1.RefusalReceipt
	if err := proto.Unmarshal(entry.Receipt.GetPayload(), &r); err != nil {
		return fmt.Errorf("decode stored refusal receipt of key %q: %w", entry.Key, err)
	}
	return fmt.Errorf("%w: %s", ErrTargetRefused, r.GetReason())
}

// finish signs the receipt of an effect that happened and marks its key
// Done.
func (c *Core) finish(ctx context.Context, a *attempt, entry Entry, ref string, first bool) (*actionv1.ExecuteResponse, error) {
	if c.d.AfterCommit != nil {
		c.d.AfterCommit()
	}
	env, err := c.sign(a, entry.EffectID, ref)
	if err != nil {
		return nil, err
	}
	err = c.d.Keys.Finish(ctx, a.key(), env)
	if errors.Is(err, ErrNotStarted) {
		// Another process settled the same effect first: its receipt is
		// the one. Unless it settled the key as refused while this
		// attempt's effect happened: that is no refusal, and only the
		// verifier's readback can now tell what the target holds.
		if taken, found, gerr := c.d.Keys.Get(ctx, a.key()); gerr == nil && found && taken.Refused() {
			a.log.Error("effect committed under a key settled as refused", zap.String("receipt_id", entry.EffectID), zap.String("record_ref", ref))
			return nil, fmt.Errorf("%w: its effect (record %s) happened after another attempt settled its key as refused", ErrInDoubt, ref)
		}
		return c.settleTaken(ctx, a, first)
	}
	if err != nil {
		// The effect happened; the key stays Started and a retry settles
		// it with the target.
		return nil, err
	}
	entry.State, entry.Receipt = Done, env
	return c.answer(ctx, a, entry, false, first)
}

// sign issues the effect receipt: exactly the capability's call.
func (c *Core) sign(a *attempt, effectID, ref string) (*receiptv1.Envelope, error) {
	env, err := c.d.Signer.Sign(&receiptv1.EffectReceipt{
		ReceiptId:      effectID,
		CapabilityId:   a.capability.GetCapabilityId(),
		TaskId:         a.capability.GetTaskId(),
		IdempotencyKey: a.key(),
		Call:           a.capability.GetCall(),
		Destination:    a.capability.GetDestination(),
		RecordRef:      ref,
		ExecutedAt:     timestamppb.New(c.d.Now().UTC()),
		Issuer:         c.d.Identity,
	})
	if err != nil {
		return nil, fmt.Errorf("sign effect receipt: %w", err)
	}
	return env, nil
}

// answer has the kernel log a Done key's receipt and returns it.
func (c *Core) answer(ctx context.Context, a *attempt, entry Entry, repeated, first bool) (*actionv1.ExecuteResponse, error) {
	index, err := c.record(ctx, entry)
	if err != nil {
		a.log.Warn("effect committed but not recorded", zap.String("receipt_id", entry.EffectID), zap.Error(err))
		return nil, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	var receipt receiptv1.EffectReceipt
	if err := proto.Unmarshal(entry.Receipt.GetPayload(), &receipt); err != nil {
		return nil, fmt.Errorf("decode stored effect receipt of key %q: %w", entry.Key, err)
	}
	a.log.Info("effect",
		zap.String("executor", a.executor.Kind()),
		zap.String("receipt_id", receipt.GetReceiptId()),
		zap.String("record_ref", receipt.GetRecordRef()),
		zap.Bool("repeated", repeated),
		zap.Bool("first_redemption", first),
	)
	return &actionv1.ExecuteResponse{Receipt: &receipt, SignedReceipt: entry.Receipt, Repeated: repeated, LogIndex: index}, nil
}

// checkState refuses a call whose record is no longer at the state
// version the capability binds (see [StateChangedError]), before the
// capability is redeemed, so that a stale decision spends nothing. It is
// skipped when the capability binds no record or version, or the record's
// source has no state check.
func (c *Core) checkState(ctx context.Context, capability *receiptv1.Capability) error {
	decided, record := capability.GetStateVersion(), capability.GetRecord()
	if decided == "" || record == "" {
		return nil
	}
	source, key, ok := strings.Cut(record, "/")
	check, configured := c.d.StateChecks[source]
	if !ok || !configured {
		return nil
	}
	current, found, err := check.Version(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrStateUnreadable, record, err)
	case !found:
		return &StateChangedError{Record: record, Decided: decided}
	case current != decided:
		return &StateChangedError{Record: record, Decided: decided, Current: current}
	}
	return nil
}

// redeem redeems the capability at the kernel for the caller.
func (c *Core) redeem(ctx context.Context, a *attempt) (first bool, err error) {
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	resp, err := c.d.Kernel.RedeemCapability(kctx, &kernelv1.RedeemCapabilityRequest{
		Capability:     a.req.GetCapability(),
		IdempotencyKey: a.key(),
		Holder:         a.caller,
	})
	if err != nil {
		return false, upstream.Classify(ctx, err, ErrKernelUnreachable)
	}
	return resp.GetFirst(), nil
}

// record has the kernel log a Done key's receipt (idempotent at the
// kernel), notes it in the key table and returns the receipt's leaf index
// in the kernel's log.
func (c *Core) record(ctx context.Context, e Entry) (uint64, error) {
	// The effect has happened: finish logging it even if the caller has
	// gone.
	ctx = context.WithoutCancel(ctx)
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	var index uint64
	if e.Refused() {
		resp, err := c.d.Kernel.RecordRefusal(kctx, &kernelv1.RecordRefusalRequest{Receipt: e.Receipt})
		if err != nil {
			return 0, fmt.Errorf("record refusal %s: %w", e.EffectID, err)
		}
		index = resp.GetLogIndex()
	} else {
		resp, err := c.d.Kernel.RecordEffect(kctx, &kernelv1.RecordEffectRequest{Receipt: e.Receipt})
		if err != nil {
			return 0, fmt.Errorf("record effect %s: %w", e.EffectID, err)
		}
		index = resp.GetLogIndex()
	}
	if !e.Recorded {
		c.marks.add(e.Key)
	}
	return index, nil
}

// keyLocks serialises the executions of one idempotency key in this
// process, so that a retry racing its first attempt waits for it instead
// of finding its key Started and settling it at the same time.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// lock waits until key is free or ctx ends.
func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		l.mu.Lock()
		ch, busy := l.held[key]
		if !busy {
			ch = make(chan struct{})
			l.held[key] = ch
			l.mu.Unlock()
			return func() {
				l.mu.Lock()
				delete(l.held, key)
				l.mu.Unlock()
				close(ch)
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
