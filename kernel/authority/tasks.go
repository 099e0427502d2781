package authority

import (
	"context"
	"slices"
	"strings"

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
	if q.Limit < 1 {
		return nil, "", refuse(ErrInvalid, "INVALID_REQUEST", "limit must be at least 1, got %d", q.Limit)
	}
	// A task is only ever bound to a contract item of the ledger, and
	// items are never removed: the tasks are those bound to its contracts.
	var contracts []canon.Classified
	for _, c := range k.ledger.all() {
		if c.Item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT && (q.ItemID == "" || c.Item.GetCanonItemId() == q.ItemID) {
			contracts = append(contracts, c)
		}
	}
	err = k.store.View(ctx, func(tx store.Tx) error {
		tasks = nil
		for _, c := range contracts {
			ids, err := tx.TasksBoundTo(c.Item.GetCanonItemId())
			if err != nil {
				return err
			}
			for _, id := range ids {
				if q.After != "" && id <= q.After {
					continue
				}
				b, err := tx.Task(id)
				if err != nil {
					return err
				}
				if q.Agent != "" && b.Agent != q.Agent {
					continue
				}
				// A compacted contract is loaded once a task of it is listed.
				c = k.ledger.filled(c)
				tasks = append(tasks, taskProto(id, b, c))
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	slices.SortFunc(tasks, func(a, b *kernelv1.Task) int { return strings.Compare(a.GetTaskId(), b.GetTaskId()) })
	if len(tasks) > q.Limit {
		tasks = tasks[:q.Limit]
		next = tasks[len(tasks)-1].GetTaskId()
	}
	return tasks, next, nil
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
