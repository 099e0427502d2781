package canon

import (
	"runtime"
	"slices"
	"sync"
)

// Classes is the class of every item of one State, kept current as
// transitions apply. [Classes.Update] reclassifies only what the
// transitions applied since the previous update can have changed: the
// items they touched, the items that cite a newly recorded item, the item
// a new or resolved conflict contests, and, transitively, the items whose
// class reads a class that changed (the challengers of an item and its
// handoff children). Its answers equal [ClassifyAll] over the same state.
//
// Items returned by a Classes are the state's own and must not be
// modified: the state never modifies a stored item (a transition stores a
// changed copy), so an item read from a Classes stays as it was read.
//
// A Classes is not safe for concurrent use; its owner serialises Update
// with the State's Apply and with its own reads.
type Classes struct {
	auth  Authorities
	state *State
	// seen is how many of the state's transitions are classified.
	seen  int
	byID  map[string]classEntry
	order []string
}

// classEntry is an item's class and its place in the order first
// recorded, so that a page of items can begin after any one of them.
type classEntry struct {
	Classified
	seq int
}

// NewClasses classifies every item of s.
func NewClasses(s *State, auth Authorities) *Classes {
	c := &Classes{auth: auth}
	c.reset(s)
	return c
}

// resetShare is how many items make it worth classifying a ledger on
// more than one core.
const resetShare = 1 << 14

func (c *Classes) reset(s *State) {
	c.state, c.seen = s, len(s.log)
	c.order = slices.Clone(s.order)
	// Classifying reads the state and writes nothing to it, and a class
	// is a function of the state alone, so the items are split between
	// cores, each with its own classifier: an item reached from two
	// shares is classified the same in both.
	results := make([]Result, len(s.order))
	shares := max(1, min(runtime.GOMAXPROCS(0), len(s.order)/resetShare))
	var wg sync.WaitGroup
	for i := range shares {
		lo, hi := i*len(s.order)/shares, (i+1)*len(s.order)/shares
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := classifier{s: s, auth: c.auth, memo: make(map[string]Result, hi-lo)}
			for j := lo; j < hi; j++ {
				results[j] = cl.classify(s.order[j])
			}
		}()
	}
	wg.Wait()
	c.byID = make(map[string]classEntry, len(s.order))
	for i, id := range s.order {
		c.byID[id] = classEntry{Classified{Item: s.records[id].item, Result: results[i]}, i}
	}
}

// Update brings the classes up to date with s after any number of
// [State.Apply] calls. Given another state than the one it follows, it
// classifies that state afresh and follows it from then on.
func (c *Classes) Update(s *State) {
	if s != c.state || len(s.log) < c.seen {
		c.reset(s)
		return
	}
	var dirty []string
	for _, t := range s.log[c.seen:] {
		switch t.Kind {
		case Propose, DeriveHandoff:
			id := t.Item.GetCanonItemId()
			dirty = append(dirty, id)
			if _, known := c.byID[id]; known {
				break // a repeated proposal: nothing new refers to it
			}
			// A newly recorded item resolves the provenance of the items
			// that cite it, and contests the item it conflicts with.
			dirty = append(dirty, s.refs.citing[id]...)
			if with := s.records[id].item.GetConflictsWith(); with != "" {
				dirty = append(dirty, with)
			}
		case ResolveConflict:
			dirty = append(dirty, t.ItemID, s.records[t.ItemID].item.GetConflictsWith())
		default:
			dirty = append(dirty, t.ItemID)
		}
	}
	c.seen = len(s.log)
	fresh := make(map[string]int, len(s.order)-len(c.order))
	for i := len(c.order); i < len(s.order); i++ {
		fresh[s.order[i]] = i
	}
	c.order = append(c.order, s.order[len(c.order):]...)

	// One classifier for the whole update: each result it computes is
	// fresh from the state's facts, so the order of the work does not
	// matter, and an item reached twice is classified once.
	cl := classifier{s: s, auth: c.auth, memo: map[string]Result{}}
	done := map[string]bool{}
	for len(dirty) > 0 {
		id := dirty[len(dirty)-1]
		dirty = dirty[:len(dirty)-1]
		r, ok := s.records[id]
		if done[id] || !ok {
			continue
		}
		done[id] = true
		res := cl.classify(id)
		prev, had := c.byID[id]
		if !had {
			prev.seq = fresh[id]
		}
		c.byID[id] = classEntry{Classified{Item: r.item, Result: res}, prev.seq}
		if had && prev.Class == res.Class {
			continue
		}
		// Only classes are read across items: a challenger's class reads
		// the class of what it contests, a handoff child's its parent's.
		dirty = append(dirty, s.refs.challengers[id]...)
		dirty = append(dirty, s.refs.children[id]...)
	}
}

// Get returns an item and its class.
func (c *Classes) Get(id string) (Classified, bool) {
	v, ok := c.byID[id]
	return v.Classified, ok
}

// Len is the number of items.
func (c *Classes) Len() int { return len(c.order) }

// Page returns at most limit items with their classes, in the order first
// recorded, beginning after the item after ("" from the first), and
// whether more follow. ok is false when after is not an item.
func (c *Classes) Page(after string, limit int) (page []Classified, more, ok bool) {
	from := 0
	if after != "" {
		e, found := c.byID[after]
		if !found {
			return nil, false, false
		}
		from = e.seq + 1
	}
	ids, more := span(c.order, from, limit)
	page = make([]Classified, len(ids))
	for i, id := range ids {
		page[i] = c.byID[id].Classified
	}
	return page, more, true
}

// span is at most limit identifiers of order from position from, and
// whether more follow.
func span(order []string, from, limit int) ([]string, bool) {
	to := min(from+limit, len(order))
	return order[from:to], to < len(order)
}

// All returns every item with its class, in the order first recorded.
func (c *Classes) All() []Classified {
	all, _, _ := c.Page("", len(c.order))
	return all
}
