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
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

// Kernel is the part of the kernel's AdapterService the evidence adapter
// uses. The generated kernelv1.AdapterServiceClient satisfies it.
type Kernel interface {
	AuthorizeRead(ctx context.Context, in *kernelv1.AuthorizeReadRequest, opts ...grpc.CallOption) (*kernelv1.AuthorizeReadResponse, error)
	RecordEvidence(ctx context.Context, in *kernelv1.RecordEvidenceRequest, opts ...grpc.CallOption) (*kernelv1.RecordEvidenceResponse, error)
	WatchedRecords(ctx context.Context, in *kernelv1.WatchedRecordsRequest, opts ...grpc.CallOption) (*kernelv1.WatchedRecordsResponse, error)
	ReportStateChange(ctx context.Context, in *kernelv1.ReportStateChangeRequest, opts ...grpc.CallOption) (*kernelv1.ReportStateChangeResponse, error)
}

var _ Kernel = kernelv1.AdapterServiceClient(nil)

// DefaultSourceTimeout bounds each read of a source when Deps leaves it
// unset, so that a hung source cannot hold a read or the watcher forever.
const DefaultSourceTimeout = 10 * time.Second

// Deps are what a [Core] needs.
type Deps struct {
	// Issuer issues the evidence receipts with the adapter's key; its log
	// gets one line per read.
	service.Issuer
	// Kernel authorises reads, logs receipts and lists watched records.
	Kernel Kernel
	// KernelTimeout bounds each kernel call.
	KernelTimeout time.Duration
	// SourceTimeout bounds each source read (0: [DefaultSourceTimeout]).
	SourceTimeout time.Duration
	// Sources maps source names to sources.
	Sources map[string]Source
}

// Core performs reads: authorise at the kernel, read, confine, derive,
// project, sign, log the receipt at the kernel, release. It also watches
// records ([Core.Watch]) and probes its sources ([Core.Check]). It holds
// no per-request state and is safe for concurrent use.
type Core struct {
	d        Deps
	compiled *compiled
	watch    watchState
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
	for _, name := range sortedNames(d.Sources) {
		if d.Sources[name].Connector == nil {
			errs = append(errs, fmt.Errorf("source %q has no connector", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new evidence core: %w", err)
	}
	if d.SourceTimeout <= 0 {
		d.SourceTimeout = DefaultSourceTimeout
	}
	d.Issuer = d.Issuer.WithDefaults()
	return &Core{d: d, compiled: newCompiled()}, nil
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

// plan is how a read releases each requested field, decided from the
// grant and the source's declaration before anything is read.
type plan struct {
	raw         []string // declared columns released as they are
	derived     []derivation
	quarantined []string // released only as text
}

func (c *Core) read(ctx context.Context, caller string, req *evidencev1.ReadRequest, fields []string, log *zap.Logger) (*evidencev1.ReadResponse, error) {
	grant, err := c.authorize(ctx, caller, req, fields)
	if err != nil {
		return nil, err
	}
	src, ok := c.d.Sources[req.GetSource()]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSource, req.GetSource())
	}
	p, err := c.plan(req.GetSource(), src.Connector.Columns(), fields, grant)
	if err != nil {
		return nil, err
	}
	rec, err := c.readRecord(ctx, src, req.GetSource(), req.GetRecordKey())
	if err != nil {
		return nil, err
	}
	if err := confine(rec, grant); err != nil {
		return nil, err
	}
	values, err := project(rec, p)
	if err != nil {
		return nil, fmt.Errorf("release %s %q: %w", req.GetSource(), req.GetRecordKey(), err)
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
		Provenance:   Stricter(src.Provenance, grant.GetProvenance()),
		Issuer:       c.d.Identity,
		Values:       values,
		Quarantined:  p.quarantined,
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
		zap.Strings("quarantined", p.quarantined),
		zap.Bool("state_changed", recorded.GetStateChanged()),
		zap.Strings("revoked_capability_ids", recorded.GetRevokedCapabilityIds()),
	)
	return &evidencev1.ReadResponse{Values: values, Receipt: receipt, SignedReceipt: env, LogIndex: recorded.GetLogIndex()}, nil
}

// plan sorts the requested fields into raw, derived and quarantined ones.
// A derived field is computed; every other field must be a declared
// column, and so must the field that confines the read.
func (c *Core) plan(source string, columns, fields []string, grant *kernelv1.AuthorizeReadResponse) (plan, error) {
	var p plan
	wanted := map[string]string{}
	for _, d := range grant.GetDerived() {
		if slices.Contains(fields, d.GetName()) {
			wanted[d.GetName()] = d.GetExpression()
		}
	}
	var unknown []string
	for _, f := range fields {
		if slices.Contains(grant.GetQuarantined(), f) {
			p.quarantined = append(p.quarantined, f)
		}
		switch _, derived := wanted[f]; {
		case derived:
		case slices.Contains(columns, f):
			p.raw = append(p.raw, f)
		default:
			unknown = append(unknown, f)
		}
	}
	if len(unknown) > 0 {
		return plan{}, fmt.Errorf("%w: source %q has no field %q", ErrUnknownField, source, unknown)
	}
	if f := grant.GetConfineField(); f != "" && !slices.Contains(columns, f) {
		return plan{}, fmt.Errorf("%w: reads are confined by field %q, which source %q does not declare", ErrUndeclaredColumn, f, source)
	}
	var err error
	p.derived, err = c.compiled.derivations(source, columns, wanted)
	return p, err
}

func (c *Core) readRecord(ctx context.Context, src Source, name, key string) (Record, error) {
	sctx, cancel := context.WithTimeout(ctx, c.d.SourceTimeout)
	defer cancel()
	rec, err := src.Connector.Read(sctx, key)
	switch {
	case err == nil:
		return rec, nil
	case ctx.Err() != nil:
		return Record{}, fmt.Errorf("read %s %q: %w", name, key, ctx.Err())
	case errors.Is(err, ErrNotFound):
		return Record{}, fmt.Errorf("%w: source %q has no record %q", ErrNotFound, name, key)
	case errors.Is(err, ErrSourceUnavailable):
		return Record{}, fmt.Errorf("read %s %q: %w", name, key, err)
	case sctx.Err() != nil:
		return Record{}, fmt.Errorf("read %s %q: %w: %v", name, key, ErrSourceUnavailable, err)
	}
	return Record{}, fmt.Errorf("read %s %q: %w", name, key, err)
}

// confine releases a record of another source than the bound record's
// only when its confining field holds the task's record key.
func confine(rec Record, grant *kernelv1.AuthorizeReadResponse) error {
	f := grant.GetConfineField()
	if f == "" {
		return nil
	}
	if v, ok := sqldb.Text(rec.Values[f]); !ok || v != grant.GetConfineValue() {
		return fmt.Errorf("%w: its field %q does not name the task's record %q", ErrOutsideTask, f, grant.GetConfineValue())
	}
	return nil
}

// project builds exactly the released values: raw columns as stored,
// derived values as computed, quarantined fields as text.
func project(rec Record, p plan) (*structpb.Struct, error) {
	derived, err := derive(p.derived, rec.Values)
	if err != nil {
		return nil, err
	}
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(p.raw)+len(derived))}
	for _, f := range p.raw {
		v, err := toValue(rec.Values[f])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f, err)
		}
		out.Fields[f] = v
	}
	for f, d := range derived {
		v, err := toValue(d)
		if err != nil {
			return nil, fmt.Errorf("derived field %q: %w", f, err)
		}
		out.Fields[f] = v
	}
	for _, f := range p.quarantined {
		out.Fields[f] = quarantined(out.Fields[f])
	}
	return out, nil
}

// authorize asks the kernel before anything is read, naming the agent as
// this adapter authenticated it and the purpose the agent reads for.
func (c *Core) authorize(ctx context.Context, caller string, req *evidencev1.ReadRequest, fields []string) (*kernelv1.AuthorizeReadResponse, error) {
	kctx, cancel := context.WithTimeout(ctx, c.d.KernelTimeout)
	defer cancel()
	resp, err := c.d.Kernel.AuthorizeRead(kctx, &kernelv1.AuthorizeReadRequest{
		Agent:     caller,
		TaskId:    req.GetTaskId(),
		Source:    req.GetSource(),
		RecordKey: req.GetRecordKey(),
		Fields:    fields,
		Purpose:   req.GetPurpose(),
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
