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
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/ambitkernel/ambit/sdk/upstream"
	"github.com/ambitkernel/ambit/verifier/readback"
)

// Kernel is the part of the kernel's AdapterService a verification needs.
// The generated kernelv1.AdapterServiceClient satisfies it.
type Kernel interface {
	RecordReadback(ctx context.Context, in *kernelv1.RecordReadbackRequest, opts ...grpc.CallOption) (*kernelv1.RecordReadbackResponse, error)
}

var _ Kernel = kernelv1.AdapterServiceClient(nil)

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
	// Readbacks are the declared readbacks, the verifier's own read-only
	// paths to the systems of record.
	Readbacks *readback.Set
	// ReadTimeout bounds each read of a system of record.
	ReadTimeout time.Duration
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
	if d.Readbacks == nil {
		errs = append(errs, errors.New("no readbacks"))
	}
	if d.ReadTimeout <= 0 {
		errs = append(errs, errors.New("read timeout is not positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new verifier core: %w", err)
	}
	d.Issuer = d.Issuer.WithDefaults()
	return &Core{d: d}, nil
}

// Verify checks one validated request (see [ValidateVerify]) for caller:
// both envelopes must verify and belong together, the tool's declared
// readback reads the system of record through its read-only path and
// evaluates every check, and the signed readback receipt is returned only
// once the kernel has logged it. A discrepancy is a MISMATCH receipt, not
// an error.
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
	if err := belong(&capability, &effect); err != nil {
		return nil, err
	}
	tool := capability.GetCall().GetTool()
	rb, ok := c.d.Readbacks.Get(tool)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoReadback, tool)
	}
	// What is checked is what the capability bound, not what the effect
	// receipt reports: the capability is the authority.
	in, err := readback.Bind(&capability, &effect)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArgumentsInvalid, err)
	}
	readAt := c.d.Now()
	rctx, cancel := context.WithTimeout(ctx, c.d.ReadTimeout)
	reading, err := rb.Read(rctx, in)
	cancel()
	switch {
	case errors.Is(err, readback.ErrArguments):
		return nil, fmt.Errorf("%w: %w", ErrArgumentsInvalid, err)
	case ctx.Err() != nil:
		// The caller gave up: its cancellation, not the source's failure.
		return nil, fmt.Errorf("read back: %w", ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrSourceUnreadable, err)
	}
	findings, causes := rb.Check(in, reading)
	st := receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED
	if len(findings) > 0 {
		st = receiptv1.ReadbackStatus_READBACK_STATUS_MISMATCH
	}
	receipt := &receiptv1.ReadbackReceipt{
		ReceiptId:       "rb-" + c.d.NewID(),
		CapabilityId:    capability.GetCapabilityId(),
		EffectReceiptId: effect.GetReceiptId(),
		TaskId:          capability.GetTaskId(),
		IdempotencyKey:  in.Key,
		Status:          st,
		Findings:        findings,
		RecordsFound:    int32(len(reading.Rows)),
		ReadAt:          timestamppb.New(readAt),
		Issuer:          c.d.Identity,
	}
	env, err := c.d.Signer.Sign(receipt)
	if err != nil {
		return nil, fmt.Errorf("sign readback receipt: %w", err)
	}
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	recorded, err := c.d.Kernel.RecordReadback(kctx, &kernelv1.RecordReadbackRequest{Receipt: env})
	if err != nil {
		return nil, upstream.Classify(ctx, err, ErrNotRecorded)
	}
	// Findings are check codes and the causes expression errors: neither
	// carries a value read.
	log.Info("readback",
		zap.String("receipt_id", receipt.GetReceiptId()),
		zap.String("capability_id", receipt.GetCapabilityId()),
		zap.String("effect_receipt_id", receipt.GetEffectReceiptId()),
		zap.String("task_id", receipt.GetTaskId()),
		zap.String("tool", tool),
		zap.String("idempotency_key", in.Key),
		zap.String("status", st.String()),
		zap.Int32("records_found", receipt.GetRecordsFound()),
		zap.Strings("findings", findings),
		zap.Errors("unevaluable", causes),
	)
	return &verifierv1.VerifyResponse{Receipt: receipt, SignedReceipt: env, LogIndex: recorded.GetLogIndex()}, nil
}

// belong checks that an effect receipt reports the capability's effect:
// the same capability, task, idempotency key, destination and call (tool
// and canonical arguments). Every difference is listed.
func belong(capability *receiptv1.Capability, effect *receiptv1.EffectReceipt) error {
	var diffs []string
	differ := func(field, got, want string) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s %q is not the capability's %q", field, got, want))
		}
	}
	differ("capability_id", effect.GetCapabilityId(), capability.GetCapabilityId())
	differ("task_id", effect.GetTaskId(), capability.GetTaskId())
	differ("idempotency_key", effect.GetIdempotencyKey(), capability.GetIdempotencyKey())
	differ("destination", effect.GetDestination(), capability.GetDestination())
	differ("call.tool", effect.GetCall().GetTool(), capability.GetCall().GetTool())
	if !sameArguments(effect.GetCall().GetArgumentsJson(), capability.GetCall().GetArgumentsJson()) {
		diffs = append(diffs, "call.arguments_json differ from the capability's")
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s", ErrReceiptMismatch, strings.Join(diffs, "; "))
	}
	return nil
}

// sameArguments reports whether two calls' arguments are the same object,
// compared in canonical form; arguments that do not parse are the same as
// nothing.
func sameArguments(a, b string) bool {
	ca, errA := toolcall.Parse("call", a)
	cb, errB := toolcall.Parse("call", b)
	return errA == nil && errB == nil && ca.Canonical() == cb.Canonical()
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
