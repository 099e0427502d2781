package action

import (
	"context"

	actionv1 "github.com/ambitkernel/ambit/proto/gen/ambit/action/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
)

// Policy is the role policy of the action adapter's server: only agents
// present capabilities.
func Policy() serve.Policy {
	return serve.Policy{
		actionv1.ActionService_Execute_FullMethodName: {pki.RoleAgent},
	}
}

// Handler serves ambit.action.v1.ActionService: validate, call the
// [Core], map the result.
type Handler struct {
	actionv1.UnimplementedActionServiceServer
	core *Core
}

var _ actionv1.ActionServiceServer = (*Handler)(nil)

// NewHandler returns the gRPC handler for core.
func NewHandler(core *Core) *Handler {
	return &Handler{core: core}
}

// Execute implements ActionService.Execute.
func (h *Handler) Execute(ctx context.Context, req *actionv1.ExecuteRequest) (*actionv1.ExecuteResponse, error) {
	return service.Handle(ctx, req, ValidateExecute, h.core.Execute, statuses())
}
