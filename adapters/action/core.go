package action

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/adapters/payments"
	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

// Kernel is the part of the kernel's AdapterService an execution needs.
// The generated kernelv1.AdapterServiceClient satisfies it.
type Kernel interface {
	RedeemCapability(ctx context.Context, in *kernelv1.RedeemCapabilityRequest, opts ...grpc.CallOption) (*kernelv1.RedeemCapabilityResponse, error)
	RecordEffect(ctx context.Context, in *kernelv1.RecordEffectRequest, opts ...grpc.CallOption) (*kernelv1.RecordEffectResponse, error)
}

var _ Kernel = kernelv1.AdapterServiceClient(nil)

// Deps are what a [Core] needs. Now, NewID and AfterCommit may be nil.
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
	// Ledger is the payments ledger the refunds are written to.
	Ledger *payments.Ledger
	// Claims, when set, is the claims database (read-only): a first
	// execution is refused when the refund's claim is no longer at the
	// capability's state version. Nil skips the check.
	Claims *sql.DB
	// AfterCommit, when set, runs right after a payment commits and before
	// anything else; see [AfterCommitHook].
	AfterCommit func()
}

// Core executes refunds. It holds no per-request state and is safe for
// concurrent use; the ledger's unique idempotency key, not a lock here,
// keeps concurrent retries to one payment.
type Core struct {
	d Deps
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
	if d.Ledger == nil {
		errs = append(errs, errors.New("no payments ledger"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new action core: %w", err)
	}
	d.Issuer = d.Issuer.WithDefaults()
	return &Core{d: d}, nil
}

// Execute performs one validated request (see [ValidateExecute]) for
// caller. See the package documentation for the order of its steps.
func (c *Core) Execute(ctx context.Context, caller string, req *actionv1.ExecuteRequest) (*actionv1.ExecuteResponse, error) {
	log := c.d.Log.With(zap.String("caller", caller), zap.String("idempotency_key", req.GetIdempotencyKey()))
	resp, err := c.execute(ctx, caller, req, log)
	if err != nil {
		log.Info("effect refused", zap.String("code", status.Code(statuses().Status(err)).String()), zap.Error(err))
		return nil, err
	}
	return resp, nil
}

func (c *Core) execute(ctx context.Context, caller string, req *actionv1.ExecuteRequest, log *zap.Logger) (*actionv1.ExecuteResponse, error) {
	// The capability must verify before anything else is believed.
	var capability receiptv1.Capability
	if err := c.d.KernelKeys.Open(req.GetCapability(), c.d.KernelKeyID, &capability); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCapabilityInvalid, err)
	}
	// A capability is not a bearer token: only the agent it was issued to
	// may present it.
	if capability.GetHolder() != caller {
		return nil, ErrNotHolder
	}
	log = log.With(zap.String("capability_id", capability.GetCapabilityId()), zap.String("task_id", capability.GetTaskId()))
	key := req.GetIdempotencyKey()
	if key != capability.GetIdempotencyKey() {
		return nil, ErrKeyMismatch
	}
	existing, found, err := c.byKey(ctx, key)
	if err != nil {
		return nil, err
	}
	if found && !proto.Equal(existing.Action, req.GetAction()) {
		return nil, ErrKeyReused
	}
	if !proto.Equal(req.GetAction(), capability.GetAction()) {
		return nil, ErrEffectDiffers
	}
	// Expiry and freshness matter only for a first execution: a retry after
	// either must still get the receipt of the effect that already happened.
	if !found {
		exp := capability.GetExpiresAt()
		if exp == nil || c.d.Now().After(exp.AsTime()) {
			return nil, ErrExpired
		}
		if err := c.checkFresh(ctx, &capability); err != nil {
			return nil, err
		}
	}
	first, err := c.redeem(ctx, req)
	if err != nil {
		return nil, err
	}
	if found && first {
		// The kernel thinks nothing was executed under this capability yet
		// the ledger has the payment (e.g. the kernel's store was reset).
		// The payment stands and is not repeated; say so once.
		log.Warn("kernel answered a first redemption for a key that already paid", zap.String("payment_id", existing.PaymentID))
	}
	p, repeated := existing, found
	if !found {
		p, repeated, err = c.commit(ctx, &capability, req)
		if err != nil {
			return nil, err
		}
	}
	if err := c.record(ctx, p); err != nil {
		log.Warn("effect committed but not recorded", zap.String("payment_id", p.PaymentID), zap.Error(err))
		return nil, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	var receipt receiptv1.EffectReceipt
	if err := proto.Unmarshal(p.Receipt.GetPayload(), &receipt); err != nil {
		return nil, fmt.Errorf("decode stored effect receipt of payment %s: %w", p.PaymentID, err)
	}
	log.Info("effect",
		zap.String("payment_id", p.PaymentID),
		zap.String("receipt_id", receipt.GetReceiptId()),
		zap.Int64("amount_minor", p.AmountMinor),
		zap.String("currency", p.Currency),
		zap.Bool("repeated", repeated),
		zap.Bool("first_redemption", first),
	)
	return &actionv1.ExecuteResponse{Receipt: &receipt, SignedReceipt: p.Receipt, Repeated: repeated}, nil
}

// checkFresh refuses a refund whose claim is no longer at the state
// version the capability binds (see [StateChangedError]), before the
// capability is redeemed, so that a stale decision spends nothing. It is
// skipped without a claims database or when the capability binds no state
// version.
func (c *Core) checkFresh(ctx context.Context, capability *receiptv1.Capability) error {
	decided := capability.GetStateVersion()
	if c.d.Claims == nil || decided == "" {
		return nil
	}
	claimID := capability.GetAction().GetRefund().GetClaimId()
	current, err := claims.Version(ctx, c.d.Claims, claims.KindClaims, claimID)
	switch {
	case errors.Is(err, claims.ErrNotFound):
		return &StateChangedError{ClaimID: claimID, Decided: decided}
	case err != nil:
		return fmt.Errorf("%w: %w", ErrClaimsUnreadable, err)
	case current != decided:
		return &StateChangedError{ClaimID: claimID, Decided: decided, Current: current}
	}
	return nil
}

func (c *Core) byKey(ctx context.Context, key string) (payments.Payment, bool, error) {
	p, err := c.d.Ledger.ByKey(ctx, key)
	switch {
	case errors.Is(err, payments.ErrNotFound):
		return payments.Payment{}, false, nil
	case err != nil:
		return payments.Payment{}, false, err
	}
	return p, true, nil
}

// redeem redeems the capability at the kernel, also for a retry: the
// kernel is asked every time, so a capability it has closed or revoked is
// refused even when a payment exists.
func (c *Core) redeem(ctx context.Context, req *actionv1.ExecuteRequest) (first bool, err error) {
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	resp, err := c.d.Kernel.RedeemCapability(kctx, &kernelv1.RedeemCapabilityRequest{
		Capability:     req.GetCapability(),
		Action:         req.GetAction(),
		IdempotencyKey: req.GetIdempotencyKey(),
	})
	if err != nil {
		return false, upstream.Classify(ctx, err, ErrKernelUnreachable)
	}
	return resp.GetFirst(), nil
}

// commit executes the refund: the signed effect receipt and the payment
// are written in one transaction. When another call committed the same key
// first, its payment is used instead and repeated is true.
func (c *Core) commit(ctx context.Context, capability *receiptv1.Capability, req *actionv1.ExecuteRequest) (p payments.Payment, repeated bool, err error) {
	refund := req.GetAction().GetRefund()
	now := c.d.Now().UTC()
	paymentID := "pay-" + c.d.NewID()
	receipt := &receiptv1.EffectReceipt{
		ReceiptId:      "eff-" + c.d.NewID(),
		CapabilityId:   capability.GetCapabilityId(),
		TaskId:         capability.GetTaskId(),
		IdempotencyKey: req.GetIdempotencyKey(),
		Action:         req.GetAction(),
		Destination:    capability.GetDestination(),
		RecordRef:      paymentID,
		ExecutedAt:     timestamppb.New(now),
		Issuer:         c.d.Identity,
	}
	env, err := c.d.Signer.Sign(receipt)
	if err != nil {
		return payments.Payment{}, false, fmt.Errorf("sign effect receipt: %w", err)
	}
	p = payments.Payment{
		PaymentID:      paymentID,
		IdempotencyKey: req.GetIdempotencyKey(),
		CapabilityID:   capability.GetCapabilityId(),
		TaskID:         capability.GetTaskId(),
		ClaimID:        refund.GetClaimId(),
		PayeeID:        refund.GetPayeeId(),
		Destination:    capability.GetDestination(),
		Currency:       refund.GetAmount().GetCurrencyCode(),
		AmountMinor:    refund.GetAmount().GetMinorUnits(),
		ExecutedAt:     now,
		Action:         req.GetAction(),
		Receipt:        env,
	}
	err = c.d.Ledger.Insert(ctx, p)
	if errors.Is(err, payments.ErrDuplicate) {
		// A concurrent retry won the race: continue as a retry of its
		// payment, which must be for the same effect.
		winner, found, err := c.byKey(ctx, req.GetIdempotencyKey())
		if err != nil {
			return payments.Payment{}, false, err
		}
		if !found {
			return payments.Payment{}, false, fmt.Errorf("payment %s conflicts but key %q has no payment", paymentID, req.GetIdempotencyKey())
		}
		if !proto.Equal(winner.Action, req.GetAction()) {
			return payments.Payment{}, false, ErrKeyReused
		}
		return winner, true, nil
	}
	if err != nil {
		return payments.Payment{}, false, err
	}
	if c.d.AfterCommit != nil {
		c.d.AfterCommit()
	}
	return p, false, nil
}

// record has the kernel log the payment's effect receipt (idempotent at
// the kernel) and notes it in the ledger.
func (c *Core) record(ctx context.Context, p payments.Payment) error {
	// The money has moved: finish logging it even if the caller has gone.
	ctx = context.WithoutCancel(ctx)
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	if _, err := c.d.Kernel.RecordEffect(kctx, &kernelv1.RecordEffectRequest{Receipt: p.Receipt}); err != nil {
		return fmt.Errorf("record effect of payment %s: %w", p.PaymentID, err)
	}
	if !p.Recorded {
		// The kernel has the receipt; failing to note that only means the
		// sweep sends it once more.
		if err := c.d.Ledger.MarkRecorded(ctx, p.PaymentID); err != nil {
			c.d.Log.Warn("mark payment recorded", zap.String("payment_id", p.PaymentID), zap.Error(err))
		}
	}
	return nil
}
