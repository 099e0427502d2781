package server

import (
	"context"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal/bundle"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/store"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"google.golang.org/protobuf/proto"
)

// GovernancePolicy opens the governance service to governance identities.
func GovernancePolicy() serve.Policy {
	p := serve.Policy{}
	for _, m := range kernelv1.GovernanceService_ServiceDesc.Methods {
		p["/"+kernelv1.GovernanceService_ServiceDesc.ServiceName+"/"+m.MethodName] = []pki.Role{pki.RoleGovernance}
	}
	return p
}

// Governance serves ambit.kernel.v1.GovernanceService.
type Governance struct {
	kernelv1.UnimplementedGovernanceServiceServer
	K *authority.Kernel
	// Store and Checkpoints answer for the log: proofs, checkpoints and
	// receipt bundles.
	Store       *store.Store
	Checkpoints *checkpoint.Publisher
}

func classified(c canon.Classified) *ledgerv1.ClassifiedItem { return c.Proto() }

// ProposeItem records a canon item.
func (s *Governance) ProposeItem(ctx context.Context, req *kernelv1.ProposeItemRequest) (*kernelv1.ProposeItemResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.K.ProposeItem(ctx, who, req.GetItem())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.ProposeItemResponse{Item: classified(c)}, nil
}

// PromoteItem promotes an item as the calling principal.
func (s *Governance) PromoteItem(ctx context.Context, req *kernelv1.PromoteItemRequest) (*kernelv1.PromoteItemResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.K.PromoteItem(ctx, who, req.GetCanonItemId())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.PromoteItemResponse{Item: classified(c)}, nil
}

// SupersedeItem replaces an item.
func (s *Governance) SupersedeItem(ctx context.Context, req *kernelv1.SupersedeItemRequest) (*kernelv1.SupersedeItemResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	o, n, err := s.K.SupersedeItem(ctx, who, req.GetOldItemId(), req.GetNewItemId())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.SupersedeItemResponse{OldItem: classified(o), NewItem: classified(n)}, nil
}

// ResolveConflict resolves a conflict.
func (s *Governance) ResolveConflict(ctx context.Context, req *kernelv1.ResolveConflictRequest) (*kernelv1.ResolveConflictResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.K.ResolveConflict(ctx, who, req.GetCanonItemId(), req.GetNote())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.ResolveConflictResponse{Item: classified(c)}, nil
}

// ListItems lists items with their classes, now or at a past instant, a
// page at a time.
func (s *Governance) ListItems(ctx context.Context, req *kernelv1.ListItemsRequest) (*kernelv1.ListItemsResponse, error) {
	var at time.Time
	if req.GetAt() != nil {
		if err := req.GetAt().CheckValid(); err != nil {
			return nil, invalid("at: " + err.Error())
		}
		at = req.GetAt().AsTime()
	}
	items, head, next, err := s.K.Items(ctx, authority.ItemQuery{At: at, After: req.GetAfterItemId(), Limit: pageLimit(req.GetLimit())})
	if err != nil {
		return nil, Status(err)
	}
	out := &kernelv1.ListItemsResponse{LedgerHead: head, NextAfterItemId: next}
	for _, c := range items {
		out.Items = append(out.Items, classified(c))
	}
	if n := fitting(out.Items); n < len(out.Items) {
		out.Items, out.NextAfterItemId = out.Items[:n], out.Items[n-1].GetItem().GetCanonItemId()
	}
	return out, nil
}

// BindTask binds a task to a contract item.
func (s *Governance) BindTask(ctx context.Context, req *kernelv1.BindTaskRequest) (*kernelv1.BindTaskResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.K.BindTask(ctx, who, req.GetTaskId(), req.GetContractItemId(), req.GetAgent())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.BindTaskResponse{Item: classified(c)}, nil
}

// DeriveHandoff derives a child contract through a declared filter.
func (s *Governance) DeriveHandoff(ctx context.Context, req *kernelv1.DeriveHandoffRequest) (*kernelv1.DeriveHandoffResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.K.DeriveHandoff(ctx, who, req.GetParentItemId(), req.GetChildItemId(), req.GetFilter(), req.GetChildTaskId(), req.GetChildAgent())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.DeriveHandoffResponse{Item: classified(c)}, nil
}

// defaultPage is a page's length when a request leaves it unset.
const defaultPage = 100

// maxPageBytes bounds a page of a listing whose entries may be large (items
// with their contracts, approvals with their calls) below the 4 MiB a gRPC
// client accepts by default: the page ends early, with its continuation,
// rather than be one no client can read. One entry always fits: it came in
// a request of at most 1 MiB.
const maxPageBytes = 3 << 20

// fitting is how many of msgs, at least one, fit in maxPageBytes.
func fitting[M proto.Message](msgs []M) int {
	size := 0
	for i, m := range msgs {
		// An entry of a repeated field costs its size, its length and its
		// tag: the 16 bytes bound the last two.
		if size += proto.Size(m) + 16; i > 0 && size > maxPageBytes {
			return i
		}
	}
	return len(msgs)
}

// pageLimit is a request's page length, defaultPage when unset; the
// request's validation bounds it.
func pageLimit(limit int32) int {
	if limit == 0 {
		return defaultPage
	}
	return int(limit)
}

// ListTasks lists bound tasks, a page at a time.
func (s *Governance) ListTasks(ctx context.Context, req *kernelv1.ListTasksRequest) (*kernelv1.ListTasksResponse, error) {
	tasks, next, err := s.K.Tasks(ctx, authority.TaskQuery{Agent: req.GetAgent(), ItemID: req.GetContractItemId(), After: req.GetAfterTaskId(), Limit: pageLimit(req.GetLimit())})
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.ListTasksResponse{Tasks: tasks, NextAfterTaskId: next}, nil
}

// ListApprovals lists approvals in one state, a page at a time.
func (s *Governance) ListApprovals(ctx context.Context, req *kernelv1.ListApprovalsRequest) (*kernelv1.ListApprovalsResponse, error) {
	a, next, err := s.K.Approvals(ctx, authority.ApprovalQuery{State: req.GetState(), After: req.GetAfterApprovalId(), Limit: pageLimit(req.GetLimit())})
	if err != nil {
		return nil, Status(err)
	}
	if n := fitting(a); n < len(a) {
		a, next = a[:n], a[n-1].GetApprovalId()
	}
	return &kernelv1.ListApprovalsResponse{Approvals: a, NextAfterApprovalId: next}, nil
}

// DecideApproval approves or rejects.
func (s *Governance) DecideApproval(ctx context.Context, req *kernelv1.DecideApprovalRequest) (*kernelv1.DecideApprovalResponse, error) {
	who, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.K.DecideApproval(ctx, who, req.GetApprovalId(), req.GetApprove(), req.GetNote())
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.DecideApprovalResponse{Approval: a}, nil
}

// ListCommitments lists commitments, a page at a time.
func (s *Governance) ListCommitments(ctx context.Context, req *kernelv1.ListCommitmentsRequest) (*kernelv1.ListCommitmentsResponse, error) {
	c, next, err := s.K.Commitments(ctx, authority.CommitmentQuery{TaskID: req.GetTaskId(), After: req.GetAfterCapabilityId(), Limit: pageLimit(req.GetLimit())})
	if err != nil {
		return nil, Status(err)
	}
	return &kernelv1.ListCommitmentsResponse{Commitments: c, NextAfterCapabilityId: next}, nil
}

// ListEntries pages through the journal.
func (s *Governance) ListEntries(ctx context.Context, req *kernelv1.ListEntriesRequest) (*kernelv1.ListEntriesResponse, error) {
	limit := int(req.GetLimit())
	switch {
	case limit < 0:
		return nil, invalid("limit must not be negative")
	case limit == 0:
		limit = defaultPage
	case limit > 1000:
		limit = 1000
	}
	// One more than the page tells whether the journal goes on.
	entries, err := s.K.Entries(ctx, req.GetAfterSeq(), limit+1)
	if err != nil {
		return nil, Status(err)
	}
	more := len(entries) > limit
	entries = entries[:min(len(entries), limit)]
	out := &kernelv1.ListEntriesResponse{}
	for _, e := range entries {
		out.Entries = append(out.Entries, bundle.EntryProto(e))
	}
	if n := fitting(out.Entries); n < len(out.Entries) {
		out.Entries, more = out.Entries[:n], true
	}
	if more {
		out.NextAfterSeq = out.Entries[len(out.Entries)-1].GetSeq()
	}
	return out, nil
}
