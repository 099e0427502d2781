package authority

import "sync"

// memo is a map of bounded size that forgets its oldest key when full:
// what the kernel remembers of what it recorded, to spare work when the
// same bytes come back. Nothing depends on a key still being there.
type memo[V any] struct {
	mu    sync.Mutex
	max   int
	m     map[string]V
	order []string
	next  int
}

func newMemo[V any](max int) *memo[V] { return &memo[V]{max: max} }

// put remembers v under k, unless k is remembered already.
func (m *memo[V]) put(k string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m, m.order = map[string]V{}, make([]string, m.max)
	}
	if _, ok := m.m[k]; ok {
		return
	}
	if old := m.order[m.next]; old != "" {
		delete(m.m, old)
	}
	m.m[k], m.order[m.next] = v, k
	m.next = (m.next + 1) % m.max
}

func (m *memo[V]) get(k string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[k]
	return v, ok
}
