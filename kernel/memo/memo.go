package memo

import "sync"

// Map is a map of bounded size that forgets its oldest key when full.
// Nothing may depend on a key still being there: a caller that misses
// does the work again.
type Map[V any] struct {
	mu  sync.Mutex
	max int
	m   map[string]V
	// order holds the keys in the order they came, a ring once full:
	// next is the oldest.
	order []string
	next  int
}

// New returns a map that holds at most n keys (at least one).
func New[V any](n int) *Map[V] { return &Map[V]{max: max(n, 1)} }

// Put remembers v under k, unless k is remembered already.
func (m *Map[V]) Put(k string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m, m.order = map[string]V{}, make([]string, 0, m.max)
	}
	if _, ok := m.m[k]; ok {
		return
	}
	if len(m.order) < m.max {
		m.order = append(m.order, k)
	} else {
		delete(m.m, m.order[m.next])
		m.order[m.next] = k
		m.next = (m.next + 1) % m.max
	}
	m.m[k] = v
}

// Get returns what k is remembered as.
func (m *Map[V]) Get(k string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[k]
	return v, ok
}

// Len is how many keys m remembers.
func (m *Map[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
