package evidence

import (
	"context"

	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Policy is the role policy of the evidence adapter's server: agents read
// for their tasks, governance reads when reviewing.
func Policy() serve.Policy {
	return serve.Policy{
		evidencev1.EvidenceService_Read_FullMethodName: {pki.RoleAgent, pki.RoleGovernance},
	}
}

// Handler serves ambit.evidence.v1.EvidenceService: validate, call the
// [Core], map the result.
type Handler struct {
	evidencev1.UnimplementedEvidenceServiceServer
	core *Core
}

var _ evidencev1.EvidenceServiceServer = (*Handler)(nil)

// NewHandler returns the gRPC handler for core.
func NewHandler(core *Core) *Handler {
	return &Handler{core: core}
}

// Read implements EvidenceService.Read.
func (h *Handler) Read(ctx context.Context, req *evidencev1.ReadRequest) (*evidencev1.ReadResponse, error) {
	return service.Handle(ctx, req, ValidateRead, h.core.Read, statuses())
}
