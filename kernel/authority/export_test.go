package authority

import (
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/memo"
)

// PastLedger reports whether k holds the ledger folded to a past instant,
// how many of its contract items hold their contract in memory, and the
// journal position the fold started from.
func PastLedger(k *Kernel) (held bool, contracts int, from int64) {
	p := &k.ledger.past
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.fold.state
	if st == nil {
		return false, 0, 0
	}
	for _, id := range st.IDs() {
		if it, ok := st.Item(id); ok && it.GetContract() != nil {
			contracts++
		}
	}
	return true, contracts, p.fold.from
}

// KeepPast sets how long k keeps a past ledger after its last page.
func KeepPast(k *Kernel, d time.Duration) {
	k.ledger.past.mu.Lock()
	defer k.ledger.past.mu.Unlock()
	k.ledger.past.kept = d
}

// ForgetCompiled drops the compiled contracts k keeps, as if maxCompiled
// others had been compiled since.
func ForgetCompiled(k *Kernel) { k.compile = memo.New[*compiled](maxCompiled) }

// CompiledTool is tool as k keeps it compiled for the contract item id,
// or nil when k keeps no compiled form of the item's contract.
func CompiledTool(k *Kernel, id, tool string) *contract.Tool {
	c, ok := k.ledger.item(id)
	if !ok {
		return nil
	}
	cc, ok := k.compile.Get(c.Item.GetContentHash())
	if !ok {
		return nil
	}
	return cc.Tools[tool]
}

// MaxCompiled is how many compiled contracts a kernel keeps.
const MaxCompiled = maxCompiled
