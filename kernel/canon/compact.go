package canon

import (
	"fmt"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
)

// A ledger of a million tasks holds a million contracts, and their decoded
// protos are most of its memory, yet classifying an item never reads its
// contract. A compacted contract item keeps its metadata and content hash
// and drops the contract; whoever needs the contract (a handoff, a debt
// check, a decision) loads it again from where it is durable, the journal,
// through a [ContentFunc], and the hash proves it is the recorded content.

// ContentFunc returns the contract of the contract item id as it was
// recorded: the contract of its proposal, or the one its handoff derived.
// The caller checks it against the item's content hash.
type ContentFunc func(id string) (*contractv1.Contract, error)

// SetContent sets how the state loads the contracts that [State.Compact]
// dropped.
func (s *State) SetContent(f ContentFunc) { s.content = f }

// Compact drops the contract of every contract item recorded since the
// previous Compact, and the transition log: the state then holds what
// classification and the transitions' rules read, and loads a contract
// through its [ContentFunc] when a rule needs one. Only the items of
// committed, durable transitions may be compacted, since their content
// must be loadable. A [Classes] that follows s classifies it afresh on its
// next update, and [State.Transitions] holds only the transitions applied
// after the compaction.
func (s *State) Compact() {
	for _, id := range s.order[s.compacted:] {
		r := s.records[id]
		if r.item.GetContract() != nil {
			r.change(func(it *ledgerv1.CanonItem) { it.Contract = nil })
		}
	}
	s.compacted = len(s.order)
	s.log = nil
}

// Compacted reports whether item is a contract item without its contract,
// as a compacted state holds it.
func Compacted(item *ledgerv1.CanonItem) bool {
	return item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT && item.GetContract() == nil
}

// WithContent returns a copy of the compacted item with its contract c,
// refused unless c is the content the item's content hash names.
func WithContent(item *ledgerv1.CanonItem, c *contractv1.Contract) (*ledgerv1.CanonItem, error) {
	full := shallow(item)
	full.Contract = c
	sum, err := ContentHash(full)
	if err != nil {
		return nil, err
	}
	if sum != item.GetContentHash() {
		return nil, fmt.Errorf("item %q: the loaded contract hashes to %s, not the recorded %s: %w", item.GetCanonItemId(), sum, item.GetContentHash(), ErrHashMismatch)
	}
	return full, nil
}

// contract returns r's contract, loading it when r was compacted.
func (s *State) contract(r *record) (*contractv1.Contract, error) {
	if !Compacted(r.item) {
		return r.item.GetContract(), nil
	}
	id := r.item.GetCanonItemId()
	if s.content == nil {
		return nil, fmt.Errorf("item %q: its contract was compacted and the ledger cannot load it", id)
	}
	c, err := s.content(id)
	if err != nil {
		return nil, fmt.Errorf("item %q: load its contract: %w", id, err)
	}
	full, err := WithContent(r.item, c)
	if err != nil {
		return nil, err
	}
	return full.GetContract(), nil
}

// withoutContentIf returns item without its contract when drop is set: a
// repeated proposal is compared with a compacted item on metadata, the
// content hashes being equal already.
func withoutContentIf(item *ledgerv1.CanonItem, drop bool) *ledgerv1.CanonItem {
	if !drop || item.GetContract() == nil {
		return item
	}
	it := shallow(item)
	it.Contract = nil
	return it
}
