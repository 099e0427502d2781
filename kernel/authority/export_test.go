package authority

import "time"

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
