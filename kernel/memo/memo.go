package memo

import "sync"

// Map is a map of bounded size. When full, a new key takes the place of
// the oldest key not found by [Map.Get] since its turn last came (the
// CLOCK policy, a second chance): a key asked for again within a turn of
// the ring stays, a key that came once and was never asked for again goes
// first. Nothing
// may depend on a key still being there: a caller that misses does the
// work again.
type Map[V any] struct {
	mu  sync.Mutex
	max int
	m   map[string]int // key → its slot
	// slots hold the keys in the order they came, a ring once full: hand
	// is the next to be looked at for a place.
	slots []slot[V]
	hand  int
}

type slot[V any] struct {
	key string
	v   V
	// used is set by Get and cleared when the hand passes the key over.
	used bool
}

// New returns a map that holds at most n keys (at least one).
func New[V any](n int) *Map[V] { return &Map[V]{max: max(n, 1)} }

// Put remembers v under k, unless k is remembered already.
func (m *Map[V]) Put(k string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m, m.slots = map[string]int{}, make([]slot[V], 0, m.max)
	}
	if _, ok := m.m[k]; ok {
		return
	}
	if len(m.slots) < m.max {
		m.m[k] = len(m.slots)
		m.slots = append(m.slots, slot[V]{key: k, v: v})
		return
	}
	// Each used key the hand passes loses its mark, so within one turn
	// of the ring it finds a key to forget.
	for m.slots[m.hand].used {
		m.slots[m.hand].used = false
		m.hand = (m.hand + 1) % m.max
	}
	s := &m.slots[m.hand]
	delete(m.m, s.key)
	*s = slot[V]{key: k, v: v}
	m.m[k] = m.hand
	m.hand = (m.hand + 1) % m.max
}

// Get returns what k is remembered as, and marks it used.
func (m *Map[V]) Get(k string) (V, bool) { return m.find(k, true) }

// Peek returns what k is remembered as, without marking it used: for a
// key asked for once, which should go in its turn.
func (m *Map[V]) Peek(k string) (V, bool) { return m.find(k, false) }

func (m *Map[V]) find(k string, use bool) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	if use {
		m.slots[i].used = true
	}
	return m.slots[i].v, true
}

// Len is how many keys m remembers.
func (m *Map[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
