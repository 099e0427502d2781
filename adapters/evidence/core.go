package evidence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/claims"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

// Kernel is the part of the kernel's AdapterService a read needs. The
// generated kernelv1.AdapterServiceClient satisfies it.
type Kernel interface {
	AuthorizeRead(ctx context.Context, in *kernelv1.AuthorizeReadRequest, opts ...grpc.CallOption) (*kernelv1.AuthorizeReadResponse, error)
	RecordEvidence(ctx context.Context, in *kernelv1.RecordEvidenceRequest, opts ...grpc.CallOption) (*kernelv1.RecordEvidenceResponse, error)
}

var _ Kernel = kernelv1.AdapterServiceClient(nil)

// Source is one readable source: its connector and the provenance class
// the deployment assigns it.
type Source struct {
	Connector  claims.Connector
	Provenance contractv1.Provenance
}

// Deps are what a [Core] needs. Now and NewID may be nil (wall clock,
// random identifiers).
type Deps struct {
	// Issuer issues the evidence receipts with the adapter's key; its log
	// gets one line per read.
	service.Issuer
	// Kernel authorises reads and logs receipts.
	Kernel Kernel
	// KernelTimeout bounds each kernel call.
	KernelTimeout time.Duration
	// Sources maps source names to sources.
	Sources map[string]Source
}

// Core performs reads: authorise at the kernel, read, sign, log the receipt
// at the kernel, release. It holds no per-request state and is safe for
// concurrent use.
type Core struct {
	d Deps
}

// NewCore checks d and returns a Core.
func NewCore(d Deps) (*Core, error) {
	errs := []error{d.Issuer.Validate()}
	if d.Kernel == nil {
		errs = append(errs, errors.New("no kernel client"))
	}
	if d.KernelTimeout <= 0 {
		errs = append(errs, errors.New("kernel timeout is not positive"))
	}
	for name, s := range d.Sources {
		if s.Connector == nil {
			errs = append(errs, fmt.Errorf("source %q has no connector", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new evidence core: %w", err)
	}
	d.Issuer = d.Issuer.WithDefaults()
	return &Core{d: d}, nil
}

// Read performs one validated read (see [ValidateRead]) for caller. The
// order matters: nothing is read before the kernel authorises it, and
// nothing is released before the kernel has logged the receipt.
func (c *Core) Read(ctx context.Context, caller string, req *evidencev1.ReadRequest) (*evidencev1.ReadResponse, error) {
	fields := slices.Sorted(slices.Values(req.GetFields()))
	log := c.d.Log.With(
		zap.String("caller", caller),
		zap.String("task_id", req.GetTaskId()),
		zap.String("source", req.GetSource()),
		zap.String("record_key", req.GetRecordKey()),
		zap.Strings("fields", fields),
	)
	resp, err := c.read(ctx, caller, req, fields, log)
	if err != nil {
		// Field values never reach a log line; errors carry names only.
		log.Info("evidence read refused", zap.String("code", status.Code(statuses().Status(err)).String()), zap.Error(err))
		return nil, err
	}
	return resp, nil
}

func (c *Core) read(ctx context.Context, caller string, req *evidencev1.ReadRequest, fields []string, log *zap.Logger) (*evidencev1.ReadResponse, error) {
	authz, err := c.authorize(ctx, caller, req, fields)
	if err != nil {
		return nil, err
	}
	src, ok := c.d.Sources[req.GetSource()]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSource, req.GetSource())
	}
	rec, err := src.Connector.Read(ctx, req.GetRecordKey(), fields)
	if err != nil {
		if errors.Is(err, claims.ErrUnknownField) || errors.Is(err, claims.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s %q: %w", req.GetSource(), req.GetRecordKey(), err)
	}
	// Release exactly the requested fields, whatever the connector returned.
	values := make(map[string]string, len(fields))
	for _, f := range fields {
		v, ok := rec.Values[f]
		if !ok {
			return nil, fmt.Errorf("read %s %q: connector returned no value for %q", req.GetSource(), req.GetRecordKey(), f)
		}
		values[f] = v
	}
	receipt := &receiptv1.EvidenceReceipt{
		ReceiptId:    "ev-" + c.d.NewID(),
		TaskId:       req.GetTaskId(),
		Source:       req.GetSource(),
		RecordKey:    req.GetRecordKey(),
		Fields:       fields,
		StateVersion: rec.StateVersion,
		Subject:      rec.Subject,
		ReadAt:       timestamppb.New(c.d.Now()),
		ContentHash:  ContentHash(values),
		Provenance:   Stricter(src.Provenance, authz.GetProvenance()),
		Issuer:       c.d.Identity,
	}
	env, err := c.d.Signer.Sign(receipt)
	if err != nil {
		return nil, fmt.Errorf("sign evidence receipt: %w", err)
	}
	recorded, err := c.record(ctx, env)
	if err != nil {
		return nil, err
	}
	log.Info("evidence released",
		zap.String("receipt_id", receipt.GetReceiptId()),
		zap.String("state_version", receipt.GetStateVersion()),
		zap.String("provenance", receipt.GetProvenance().String()),
		zap.Bool("state_changed", recorded.GetStateChanged()),
		zap.Strings("revoked_capability_ids", recorded.GetRevokedCapabilityIds()),
	)
	return &evidencev1.ReadResponse{Values: values, Receipt: receipt, SignedReceipt: env}, nil
}

// authorize asks the kernel before anything is read, naming the agent as
// this adapter authenticated it: only the task's agent may read for it.
func (c *Core) authorize(ctx context.Context, caller string, req *evidencev1.ReadRequest, fields []string) (*kernelv1.AuthorizeReadResponse, error) {
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	resp, err := c.d.Kernel.AuthorizeRead(kctx, &kernelv1.AuthorizeReadRequest{
		Agent:     caller,
		TaskId:    req.GetTaskId(),
		Source:    req.GetSource(),
		RecordKey: req.GetRecordKey(),
		Fields:    fields,
	})
	if err != nil {
		return nil, upstream.Classify(ctx, err, ErrKernelUnreachable)
	}
	return resp, nil
}

func (c *Core) record(ctx context.Context, env *receiptv1.Envelope) (*kernelv1.RecordEvidenceResponse, error) {
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	resp, err := c.d.Kernel.RecordEvidence(kctx, &kernelv1.RecordEvidenceRequest{Receipt: env})
	if err != nil {
		return nil, upstream.Classify(ctx, err, ErrNotRecorded)
	}
	return resp, nil
}

// Stricter returns the provenance class with less authority: the higher
// value. Unspecified counts as nothing; a value this build does not know
// counts as the strictest known class, since it cannot be trusted more.
func Stricter(a, b contractv1.Provenance) contractv1.Provenance {
	norm := func(p contractv1.Provenance) contractv1.Provenance {
		if _, ok := contractv1.Provenance_name[int32(p)]; !ok || p < 0 {
			return contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING
		}
		return p
	}
	return max(norm(a), norm(b))
}
