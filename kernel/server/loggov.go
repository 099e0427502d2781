package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/bundle"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	logv1 "github.com/ambitkernel/ambit/proto/gen/ambit/log/v1"
)

// VerifyLog verifies the journal against itself and every checkpoint in
// the checkpoint directory, which narrow down a bad entry.
func (s *Governance) VerifyLog(ctx context.Context, _ *kernelv1.VerifyLogRequest) (*kernelv1.VerifyLogResponse, error) {
	cps, err := s.Checkpoints.Dir().All(s.Checkpoints.Verifier())
	if err != nil {
		return nil, err
	}
	r, err := s.K.VerifyLog(ctx, checkpoint.Heads(cps))
	if err != nil {
		return nil, Status(err)
	}
	out := &kernelv1.VerifyLogResponse{Ok: r.OK, Entries: r.Entries, FirstBadSeq: r.FirstBad, LastBadSeq: r.LastBad, Problem: r.Problem}
	if r.OK {
		out.Head = r.Head.String()
	}
	return out, nil
}

// GetCheckpoint returns the latest checkpoint, signed first when entries
// were appended since the last one.
func (s *Governance) GetCheckpoint(ctx context.Context, _ *kernelv1.GetCheckpointRequest) (*kernelv1.GetCheckpointResponse, error) {
	cp, err := s.Checkpoints.Covering(ctx, s.Store.JournalSize())
	if err != nil {
		return nil, err
	}
	return &kernelv1.GetCheckpointResponse{Checkpoint: bundle.CheckpointProto(cp)}, nil
}

// GetInclusionProof proves an entry's inclusion in a checkpoint's tree.
func (s *Governance) GetInclusionProof(ctx context.Context, req *kernelv1.GetInclusionProofRequest) (*kernelv1.GetInclusionProofResponse, error) {
	cp, size, err := s.tree(ctx, req.GetTreeSize())
	if err != nil {
		return nil, err
	}
	if req.GetLeafIndex() >= size {
		return nil, logRefusal(authority.ErrInvalid, "LEAF_BEYOND_TREE", "leaf %d is not in a tree of %d entries", req.GetLeafIndex(), size)
	}
	hashes, err := s.Store.InclusionProof(ctx, req.GetLeafIndex(), size)
	if err != nil {
		return nil, logStatus(err)
	}
	return &kernelv1.GetInclusionProofResponse{
		Proof:      &logv1.InclusionProof{LeafIndex: req.GetLeafIndex(), TreeSize: size, Hashes: hashes},
		Checkpoint: cp,
	}, nil
}

// GetConsistencyProof proves that a smaller tree is a prefix of a
// checkpoint's.
func (s *Governance) GetConsistencyProof(ctx context.Context, req *kernelv1.GetConsistencyProofRequest) (*kernelv1.GetConsistencyProofResponse, error) {
	cp, size, err := s.tree(ctx, req.GetToSize())
	if err != nil {
		return nil, err
	}
	if req.GetFromSize() > size {
		return nil, logRefusal(authority.ErrInvalid, "TREE_SIZE_BEYOND_LOG", "from_size %d is larger than the tree of %d entries", req.GetFromSize(), size)
	}
	hashes, err := s.Store.ConsistencyProof(ctx, req.GetFromSize(), size)
	if err != nil {
		return nil, logStatus(err)
	}
	return &kernelv1.GetConsistencyProofResponse{
		Proof:      &logv1.ConsistencyProof{FromSize: req.GetFromSize(), ToSize: size, Hashes: hashes},
		Checkpoint: cp,
	}, nil
}

// tree resolves a requested tree size: 0 is the latest checkpoint's,
// signed first when entries were appended since; another size is checked
// against the log, with its checkpoint when the kernel signed one.
func (s *Governance) tree(ctx context.Context, size uint64) (*logv1.Checkpoint, uint64, error) {
	if size == 0 {
		cp, err := s.Checkpoints.Covering(ctx, s.Store.JournalSize())
		if err != nil {
			return nil, 0, logStatus(err)
		}
		return bundle.CheckpointProto(cp), cp.Head.Size, nil
	}
	if size > s.Store.JournalSize() {
		return nil, 0, logRefusal(authority.ErrInvalid, "TREE_SIZE_BEYOND_LOG", "tree size %d is beyond the log's %d entries", size, s.Store.JournalSize())
	}
	cp, ok, err := s.Checkpoints.Dir().At(size, s.Checkpoints.Verifier())
	if err != nil || !ok {
		return nil, size, err
	}
	return bundle.CheckpointProto(cp), size, nil
}

// ExportReceipt returns a receipt bundle.
func (s *Governance) ExportReceipt(ctx context.Context, req *kernelv1.ExportReceiptRequest) (*kernelv1.ExportReceiptResponse, error) {
	if req.GetReceiptId() == "" {
		return nil, invalid("receipt_id must not be empty")
	}
	b, err := bundle.Export(ctx, s.Store, s.Checkpoints, req.GetReceiptId(), authority.ReceiptKinds, req.GetTreeSize())
	if err != nil {
		return nil, logStatus(err)
	}
	return &kernelv1.ExportReceiptResponse{Bundle: b}, nil
}

// logStatus maps the log's errors onto refusals; anything else is internal.
func logStatus(err error) error {
	switch {
	case errors.Is(err, bundle.ErrNotFound):
		return logRefusal(authority.ErrNotFound, "RECEIPT_NOT_FOUND", "%v", err)
	case errors.Is(err, bundle.ErrNoCheckpoint):
		return logRefusal(authority.ErrNotFound, "CHECKPOINT_NOT_FOUND", "%v", err)
	case errors.Is(err, journal.ErrBeyondHead):
		return logRefusal(authority.ErrInvalid, "TREE_SIZE_BEYOND_LOG", "%v", err)
	}
	return err
}

func logRefusal(kind error, reason, format string, args ...any) error {
	return Status(&authority.Refusal{Kind: kind, Reason: reason, Message: fmt.Sprintf(format, args...)})
}
