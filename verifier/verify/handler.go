package verify

import (
	"context"

	verifierv1 "github.com/ambitkernel/ambit/proto/gen/ambit/verifier/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Policy is the role policy of the verifier's server: agents ask for the
// readback that closes their commitment; governance may re-check one.
func Policy() serve.Policy {
	return serve.Policy{
		verifierv1.VerifierService_Verify_FullMethodName: {pki.RoleAgent, pki.RoleGovernance},
	}
}

// Handler serves ambit.verifier.v1.VerifierService: validate, call the
// [Core], map the result.
type Handler struct {
	verifierv1.UnimplementedVerifierServiceServer
	core *Core
}

var _ verifierv1.VerifierServiceServer = (*Handler)(nil)

// NewHandler returns the gRPC handler for core.
func NewHandler(core *Core) *Handler {
	return &Handler{core: core}
}

// Verify implements VerifierService.Verify.
func (h *Handler) Verify(ctx context.Context, req *verifierv1.VerifyRequest) (*verifierv1.VerifyResponse, error) {
	return service.Handle(ctx, req, ValidateVerify, h.core.Verify, statuses())
}
