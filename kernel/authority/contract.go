package authority

import (
	"errors"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	"github.com/ambitkernel/ambit/kernel/store"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

// compiled is a contract ready for evaluation. Compiling is keyed by
// content hash, so a contract is compiled once however often it is used;
// it holds content only, because several items may hold the same bytes.
type compiled struct {
	*contract.Compiled
	hash  string
	proto *contractv1.Contract
	eval  *evaluate.Contract
}

// bound is a task's contract as it stands at one moment, and the agent
// bound to the task.
type bound struct {
	*compiled
	itemID string
	class  ledgerv1.CanonClass
	agent  string
}

// actor refuses any agent but the task's.
func (b *bound) actor(taskID, agent string) error {
	if agent != b.agent {
		return refuse(ErrDenied, "TASK_OTHER_AGENT", "task %q is bound to another agent than %q", taskID, agent)
	}
	return nil
}

// canonical reports whether the contract may grant anything.
func (b *bound) canonical() bool { return b.class == ledgerv1.CanonClass_CANON_CLASS_CANONICAL }

// classIfNotCanonical is the class the evaluator must see: "" for a
// canonical contract.
func (b *bound) classIfNotCanonical() string {
	if b.canonical() {
		return ""
	}
	return b.class.String()
}

// taskContract returns the contract a task is bound to, with its current
// ledger class.
func (k *Kernel) taskContract(tx store.Tx, taskID string) (*bound, error) {
	task, err := tx.Task(taskID)
	itemID := task.ItemID
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse(ErrStale, "TASK_NOT_BOUND", "task %q is not bound to a contract; governance binds tasks", taskID)
	}
	if err != nil {
		return nil, err
	}
	c, ok := k.ledger.item(itemID)
	if !ok || c.Item.GetKind() != ledgerv1.ItemKind_ITEM_KIND_CONTRACT {
		return nil, fmt.Errorf("task %q is bound to %q, which is not a contract item in the ledger", taskID, itemID)
	}
	cc, err := k.compiledItem(c.Item)
	if err != nil {
		return nil, err
	}
	return &bound{compiled: cc, itemID: itemID, class: c.Class, agent: task.Agent}, nil
}

// maxCompiled bounds the compiled contracts the kernel keeps, about 9 KB
// each with their contract. A contract of its own per task would
// otherwise keep one in memory for every task ever read from or decided
// on. Past it, a task's contract, when next used, is loaded from the
// journal and compiled again (a fifth of a millisecond), its tools and
// derived fields shared with the other contracts' (contract.Compiler).
const maxCompiled = 8192

// compiledItem returns a contract item's compiled contract. A compacted
// item's contract is loaded from the journal only when no item with the
// same content is kept compiled.
func (k *Kernel) compiledItem(item *ledgerv1.CanonItem) (*compiled, error) {
	if cc, ok := k.compile.Get(item.GetContentHash()); ok {
		return cc, nil
	}
	full, err := k.ledger.contract(item)
	if err != nil {
		return nil, err
	}
	return k.compiled(full.GetCanonItemId(), full.GetContentHash(), full.GetContract())
}

func (k *Kernel) compiled(itemID, hash string, c *contractv1.Contract) (*compiled, error) {
	if cc, ok := k.compile.Get(hash); ok {
		return cc, nil
	}
	cc0, err := k.compiler.Compile(c)
	if err != nil {
		return nil, fmt.Errorf("contract item %q: %w", itemID, err)
	}
	eval := cc0.Eval
	if maxAge := int64(watchWindow / time.Second); eval.MaxAgeSeconds > maxAge {
		// A change to a record read longer ago than the watch window
		// would go unseen (coupling rule 3): evidence that old cannot
		// stand for the record's state, whatever the contract allows.
		capped := *eval
		capped.MaxAgeSeconds = maxAge
		eval = &capped
	}
	cc := &compiled{Compiled: cc0, hash: hash, proto: c, eval: eval}
	k.compile.Put(hash, cc)
	return cc, nil
}
