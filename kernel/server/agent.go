package server

import (
	"context"

	"github.com/ambitkernel/ambit/kernel/authority"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AgentPolicy opens the agent service to agents and nothing else.
func AgentPolicy() serve.Policy {
	p := serve.Policy{}
	for _, m := range []string{"SubmitProposal", "GetSelfView", "RequestBoundaryChange"} {
		p["/"+agentv1.AgentService_ServiceDesc.ServiceName+"/"+m] = []pki.Role{pki.RoleAgent}
	}
	return p
}

// Agent serves ambit.agent.v1.AgentService.
type Agent struct {
	agentv1.UnimplementedAgentServiceServer
	K *authority.Kernel
}

func caller(ctx context.Context) (string, error) {
	id, ok := serve.Caller(ctx)
	if !ok {
		return "", status.Error(codes.Unauthenticated, "no peer identity")
	}
	return id.Name, nil
}

// SubmitProposal decides one typed proposal.
func (s *Agent) SubmitProposal(ctx context.Context, req *agentv1.SubmitProposalRequest) (*agentv1.SubmitProposalResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.K.Submit(ctx, authority.Proposal{
		Agent: who, TaskID: req.GetTaskId(), Purpose: req.GetPurpose(), Call: req.GetCall(),
		Evidence: req.GetEvidence(), ApprovalID: req.GetApprovalId(), RequestID: req.GetRequestId(),
	})
	return d, Status(err)
}

// GetSelfView answers the granted self-facts.
func (s *Agent) GetSelfView(ctx context.Context, req *agentv1.GetSelfViewRequest) (*agentv1.GetSelfViewResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := s.K.SelfView(ctx, who, req.GetTaskId(), req.GetFacts())
	return v, Status(err)
}

// RequestBoundaryChange records a governance item; the contract is
// unchanged.
func (s *Agent) RequestBoundaryChange(ctx context.Context, req *agentv1.RequestBoundaryChangeRequest) (*agentv1.RequestBoundaryChangeResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.K.BoundaryChange(ctx, who, req.GetTaskId(), req.GetDescription())
	if err != nil {
		return nil, Status(err)
	}
	return &agentv1.RequestBoundaryChangeResponse{ItemId: c.Item.GetCanonItemId(), Class: c.Class.String()}, nil
}
