package authority

import (
	"context"
	"fmt"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/store"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

// TaskQuery selects one page of bound tasks.
type TaskQuery struct {
	// Agent, when set, keeps the tasks this agent acts on.
	Agent string
	// ItemID, when set, keeps the tasks bound to this contract item.
	ItemID string
	// After keeps the tasks whose identifier sorts after it.
	After string
	// Limit bounds the page; it is at least 1.
	Limit int
}

// Tasks lists the bound tasks q selects, ordered by task identifier, each
// with its contract item, its agent and the contract's class now. next is
// the last task of the page when more follow, else empty.
func (k *Kernel) Tasks(ctx context.Context, q TaskQuery) (tasks []*kernelv1.Task, next string, err error) {
	rows, next, err := readPage(ctx, k, q.Limit, func(tx store.Tx, n int) ([]store.BoundTask, error) {
		return tx.Tasks(q.After, q.Agent, q.ItemID, n)
	}, func(r store.BoundTask) string { return r.TaskID })
	if err != nil {
		return nil, "", err
	}
	items := make([]canon.Classified, len(rows))
	for i, r := range rows {
		// A task is only ever bound to a contract item of the ledger.
		c, ok := k.ledger.item(r.ItemID)
		if !ok || c.Item.GetKind() != ledgerv1.ItemKind_ITEM_KIND_CONTRACT {
			return nil, "", fmt.Errorf("task %q is bound to %q, which is no contract of the ledger", r.TaskID, r.ItemID)
		}
		items[i] = c
	}
	// A compacted contract is loaded once a task of it is listed.
	if err := k.ledger.fill(ctx, items); err != nil {
		return nil, "", err
	}
	for i, r := range rows {
		tasks = append(tasks, taskProto(r.TaskID, r.Task, items[i]))
	}
	return tasks, next, nil
}

// readPage reads one page of at most limit rows with read, which it asks
// for one row more to learn whether more follow; next is the key of the
// page's last row then, else empty.
func readPage[T any](ctx context.Context, k *Kernel, limit int, read func(tx store.Tx, n int) ([]T, error), key func(T) string) (page []T, next string, err error) {
	if limit < 1 {
		return nil, "", refuse(ErrInvalid, "INVALID_REQUEST", "limit must be at least 1, got %d", limit)
	}
	err = k.store.View(ctx, func(tx store.Tx) error {
		page, err = read(tx, limit+1)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(page) > limit {
		page = page[:limit]
		next = key(page[limit-1])
	}
	return page, next, nil
}

func taskProto(id string, b store.Task, c canon.Classified) *kernelv1.Task {
	ct := c.Item.GetContract()
	return &kernelv1.Task{
		TaskId:          id,
		ContractItemId:  b.ItemID,
		Agent:           b.Agent,
		ContractClass:   c.Class,
		ContractId:      ct.GetContractId(),
		ContractVersion: ct.GetVersion(),
		ValidUntil:      ct.GetBinding().GetValidUntil(),
	}
}
