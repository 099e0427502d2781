package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
)

// ErrBeyondHead marks a tree size or leaf index the log does not have.
var ErrBeyondHead = errors.New("beyond the log's head")

// InclusionProof proves that the leaf at index (the entry Seq index+1) is
// in the tree of the given size. It reads O(log size) rows; q should be one
// read transaction, so that the rows and the head agree.
func InclusionProof(ctx context.Context, q RowQuerier, index, size uint64) ([][]byte, error) {
	if err := within(ctx, q, size); err != nil {
		return nil, err
	}
	if index >= size {
		return nil, fmt.Errorf("inclusion proof: leaf %d in a tree of %d: %w", index, size, ErrBeyondHead)
	}
	nodes, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof: %w", err)
	}
	return fetchProof(ctx, q, nodes)
}

// ConsistencyProof proves that the tree of size1 is a prefix of the tree of
// size2. It reads O(log size2) rows.
func ConsistencyProof(ctx context.Context, q RowQuerier, size1, size2 uint64) ([][]byte, error) {
	if size1 > size2 {
		return nil, fmt.Errorf("consistency proof from %d to %d: the first size is larger", size1, size2)
	}
	if err := within(ctx, q, size2); err != nil {
		return nil, err
	}
	nodes, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, fmt.Errorf("consistency proof: %w", err)
	}
	return fetchProof(ctx, q, nodes)
}

// RootAt is the root hash of the tree over the first size entries, from
// the stored hashes of its perfect subtrees.
func RootAt(ctx context.Context, q RowQuerier, size uint64) ([]byte, error) {
	if err := within(ctx, q, size); err != nil {
		return nil, err
	}
	if size == 0 {
		return EmptyRoot(), nil
	}
	ids := compact.RangeNodes(0, size, nil)
	hashes := make([][]byte, len(ids))
	for i, id := range ids {
		h, err := nodeHash(ctx, q, id)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	rng, err := ranges.NewRange(0, size, hashes)
	if err != nil {
		return nil, err
	}
	return rng.GetRootHash(nil)
}

func within(ctx context.Context, q RowQuerier, size uint64) error {
	var last int64
	err := q.QueryRowContext(ctx, `SELECT seq FROM journal ORDER BY seq DESC LIMIT 1`).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("journal head: %w", err)
	}
	if size > uint64(last) {
		return fmt.Errorf("tree size %d, log size %d: %w", size, last, ErrBeyondHead)
	}
	return nil
}

func fetchProof(ctx context.Context, q RowQuerier, nodes proof.Nodes) ([][]byte, error) {
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		h, err := nodeHash(ctx, q, id)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	return nodes.Rehash(hashes, Hasher.HashChildren)
}

// nodeHash reads the hash of a perfect subtree: the entry that completed
// it, its last leaf, stores it at the subtree's level.
func nodeHash(ctx context.Context, q RowQuerier, id compact.NodeID) ([]byte, error) {
	seq := (id.Index + 1) << id.Level
	var hashes []byte
	err := q.QueryRowContext(ctx, `SELECT hashes FROM journal WHERE seq = ?`, int64(seq)).Scan(&hashes)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("journal entry %d, which holds subtree %d/%d, is missing", seq, id.Level, id.Index)
	}
	if err != nil {
		return nil, fmt.Errorf("journal entry %d: %w", seq, err)
	}
	lo := int(id.Level) * hashSize
	if len(hashes) < lo+hashSize {
		return nil, fmt.Errorf("journal entry %d holds no hash at level %d", seq, id.Level)
	}
	return hashes[lo : lo+hashSize], nil
}
