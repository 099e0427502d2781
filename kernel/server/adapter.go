package server

import (
	"context"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// AdapterPolicy opens each adapter method to the one role that uses it.
func AdapterPolicy() serve.Policy {
	svc := "/" + kernelv1.AdapterService_ServiceDesc.ServiceName + "/"
	return serve.Policy{
		svc + "AuthorizeRead":     {pki.RoleEvidence},
		svc + "RecordEvidence":    {pki.RoleEvidence},
		svc + "RedeemCapability":  {pki.RoleAction},
		svc + "RecordEffect":      {pki.RoleAction},
		svc + "RecordRefusal":     {pki.RoleAction},
		svc + "RecordReadback":    {pki.RoleVerifier},
		svc + "ReportStateChange": {pki.RoleEvidence},
		svc + "WatchedRecords":    {pki.RoleEvidence},
	}
}

// Adapter serves ambit.kernel.v1.AdapterService.
type Adapter struct {
	kernelv1.UnimplementedAdapterServiceServer
	K *authority.Kernel
}

// AuthorizeRead checks a read before it happens.
func (s *Adapter) AuthorizeRead(ctx context.Context, req *kernelv1.AuthorizeReadRequest) (*kernelv1.AuthorizeReadResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	g, err := s.K.AuthorizeRead(ctx, authority.Read{
		Sidecar: who, Agent: req.GetAgent(), TaskID: req.GetTaskId(), Purpose: req.GetPurpose(), Source: req.GetSource(), RecordKey: req.GetRecordKey(), Fields: req.GetFields(),
	})
	return g, Status(err)
}

// RecordEvidence logs an evidence receipt signed by the calling adapter.
func (s *Adapter) RecordEvidence(ctx context.Context, req *kernelv1.RecordEvidenceRequest) (*kernelv1.RecordEvidenceResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.K.RecordEvidence(ctx, who, req.GetReceipt())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.RecordEvidenceResponse{StateChanged: r.StateChanged, RevokedCapabilityIds: r.Revoked, LogIndex: r.LogIndex}, nil
}

// RedeemCapability redeems a capability once.
func (s *Adapter) RedeemCapability(ctx context.Context, req *kernelv1.RedeemCapabilityRequest) (*kernelv1.RedeemCapabilityResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.K.Redeem(ctx, who, req.GetCapability(), req.GetIdempotencyKey(), req.GetHolder())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.RedeemCapabilityResponse{First: r.First, Commitment: r.Commitment}, nil
}

// RecordEffect logs an effect receipt signed by the calling adapter.
func (s *Adapter) RecordEffect(ctx context.Context, req *kernelv1.RecordEffectRequest) (*kernelv1.RecordEffectResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, index, err := s.K.RecordEffect(ctx, who, req.GetReceipt())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.RecordEffectResponse{Commitment: c, LogIndex: index}, nil
}

// RecordRefusal logs a refusal receipt signed by the calling adapter.
func (s *Adapter) RecordRefusal(ctx context.Context, req *kernelv1.RecordRefusalRequest) (*kernelv1.RecordRefusalResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, index, err := s.K.RecordRefusal(ctx, who, req.GetReceipt())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.RecordRefusalResponse{Commitment: c, LogIndex: index}, nil
}

// RecordReadback logs a readback receipt signed by the calling verifier.
func (s *Adapter) RecordReadback(ctx context.Context, req *kernelv1.RecordReadbackRequest) (*kernelv1.RecordReadbackResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, index, err := s.K.RecordReadback(ctx, who, req.GetReceipt())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.RecordReadbackResponse{Commitment: c, LogIndex: index}, nil
}

// ReportStateChange notes a watched record's new state version; a change
// revokes what depended on the old one.
func (s *Adapter) ReportStateChange(ctx context.Context, req *kernelv1.ReportStateChangeRequest) (*kernelv1.ReportStateChangeResponse, error) {
	var observed time.Time
	if req.GetObservedAt() != nil {
		observed = req.GetObservedAt().AsTime()
	}
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.K.ReportStateChange(ctx, who, req.GetSource(), req.GetRecordKey(), req.GetStateVersion(), observed)
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.ReportStateChangeResponse{StateChanged: r.StateChanged, RevokedCapabilityIds: r.Revoked}, nil
}

// WatchedRecords lists the records whose changes matter.
func (s *Adapter) WatchedRecords(ctx context.Context, _ *kernelv1.WatchedRecordsRequest) (*kernelv1.WatchedRecordsResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := s.K.WatchedRecords(ctx, who)
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.WatchedRecordsResponse{Records: rs}, nil
}
