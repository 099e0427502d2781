package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/upstream"
	"github.com/ambitkernel/ambit/verifier/readback"
)

// Kernel is the part of the kernel's AdapterService a verification needs.
// The generated kernelv1.AdapterServiceClient satisfies it.
type Kernel interface {
	RecordReadback(ctx context.Context, in *kernelv1.RecordReadbackRequest, opts ...grpc.CallOption) (*kernelv1.RecordReadbackResponse, error)
}

var _ Kernel = kernelv1.AdapterServiceClient(nil)

// Ledger reads the system of record: the payments under an idempotency key
// and the payments for a claim, consistently. payments.Reader implements
// it.
type Ledger interface {
	Read(ctx context.Context, key, claimID string) (forKey, forClaim []readback.Row, err error)
}

// Deps are what a [Core] needs. Now and NewID may be nil.
type Deps struct {
	// Issuer issues the readback receipts with the verifier's key; its log
	// gets one line per verification.
	service.Issuer
	// Keys holds the kernel's and the action adapter's public keys.
	Keys envelope.Keyring
	// KernelKeyID must sign capabilities; ActionKeyID effect receipts.
	KernelKeyID string
	ActionKeyID string
	// Kernel logs readback receipts.
	Kernel Kernel
	// KernelTimeout bounds each kernel call.
	KernelTimeout time.Duration
	// Ledger is the read-only path to the payments ledger.
	Ledger Ledger
}

// Core performs verifications. It is safe for concurrent use.
type Core struct {
	d Deps
}

// NewCore checks d and returns a Core.
func NewCore(d Deps) (*Core, error) {
	errs := []error{d.Issuer.Validate()}
	if _, ok := d.Keys[d.KernelKeyID]; !ok || d.KernelKeyID == "" {
		errs = append(errs, fmt.Errorf("no kernel key %q", d.KernelKeyID))
	}
	if _, ok := d.Keys[d.ActionKeyID]; !ok || d.ActionKeyID == "" {
		errs = append(errs, fmt.Errorf("no action key %q", d.ActionKeyID))
	}
	if d.KernelKeyID == d.ActionKeyID {
		errs = append(errs, errors.New("kernel and action key ids are the same"))
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
		return nil, fmt.Errorf("new verifier core: %w", err)
	}
	d.Issuer = d.Issuer.WithDefaults()
	return &Core{d: d}, nil
}

// Verify checks one validated request (see [ValidateVerify]) for caller:
// both envelopes must verify, the ledger is read through the read-only
// path, [readback.Check] decides, and the signed readback receipt is
// returned only once the kernel has logged it. A discrepancy is a
// MISMATCH receipt, not an error.
func (c *Core) Verify(ctx context.Context, caller string, req *verifierv1.VerifyRequest) (*verifierv1.VerifyResponse, error) {
	log := c.d.Log.With(zap.String("caller", caller))
	resp, err := c.verify(ctx, req, log)
	if err != nil {
		log.Info("readback refused", zap.String("code", status.Code(statuses().Status(err)).String()), zap.Error(err))
		return nil, err
	}
	return resp, nil
}

func (c *Core) verify(ctx context.Context, req *verifierv1.VerifyRequest, log *zap.Logger) (*verifierv1.VerifyResponse, error) {
	var capability receiptv1.Capability
	if err := c.d.Keys.Open(req.GetCapability(), c.d.KernelKeyID, &capability); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCapabilityInvalid, err)
	}
	var effect receiptv1.EffectReceipt
	if err := c.d.Keys.Open(req.GetEffectReceipt(), c.d.ActionKeyID, &effect); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEffectInvalid, err)
	}
	// Look up what the capability bound, not what the effect receipt
	// claims: the capability is the authority.
	key := capability.GetIdempotencyKey()
	claimID := capability.GetAction().GetRefund().GetClaimId()
	readAt := c.d.Now()
	forKey, forClaim, err := c.d.Ledger.Read(ctx, key, claimID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLedgerUnreadable, err)
	}
	st, findings := readback.Check(&capability, &effect, forKey, forClaim)
	receipt := &receiptv1.ReadbackReceipt{
		ReceiptId:       "rb-" + c.d.NewID(),
		CapabilityId:    capability.GetCapabilityId(),
		EffectReceiptId: effect.GetReceiptId(),
		TaskId:          capability.GetTaskId(),
		IdempotencyKey:  key,
		Status:          st,
		Findings:        findings,
		RecordsFound:    int32(len(forKey)),
		ReadAt:          timestamppb.New(readAt),
		Issuer:          c.d.Identity,
	}
	env, err := c.d.Signer.Sign(receipt)
	if err != nil {
		return nil, fmt.Errorf("sign readback receipt: %w", err)
	}
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	if _, err := c.d.Kernel.RecordReadback(kctx, &kernelv1.RecordReadbackRequest{Receipt: env}); err != nil {
		return nil, upstream.Classify(ctx, err, ErrNotRecorded)
	}
	log.Info("readback",
		zap.String("receipt_id", receipt.GetReceiptId()),
		zap.String("capability_id", receipt.GetCapabilityId()),
		zap.String("effect_receipt_id", receipt.GetEffectReceiptId()),
		zap.String("task_id", receipt.GetTaskId()),
		zap.String("idempotency_key", key),
		zap.String("status", st.String()),
		zap.Int32("records_found", receipt.GetRecordsFound()),
		zap.Strings("findings", findings),
	)
	return &verifierv1.VerifyResponse{Receipt: receipt, SignedReceipt: env}, nil
}

// ValidateVerify checks the shape of a request: both envelopes present.
func ValidateVerify(req *verifierv1.VerifyRequest) error {
	var problems []string
	if req.GetCapability() == nil {
		problems = append(problems, "capability is required")
	}
	if req.GetEffectReceipt() == nil {
		problems = append(problems, "effect_receipt is required")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(problems, "; "))
	}
	return nil
}
