package memo

import (
	"strconv"
	"testing"
)

// TestForgetsOldest: a full map forgets its oldest key for a new one, and
// remembering a key again neither moves nor replaces it.
func TestForgetsOldest(t *testing.T) {
	m := New[int](3)
	for i := range 3 {
		m.Put(strconv.Itoa(i), i)
	}
	m.Put("0", 99) // remembered already: kept as it was, still the oldest
	if v, ok := m.Get("0"); !ok || v != 0 {
		t.Errorf("Get(0) = %d, %v; want 0, true", v, ok)
	}
	m.Put("3", 3)
	if _, ok := m.Get("0"); ok {
		t.Error("the oldest key is still remembered past the map's size")
	}
	for i := 1; i <= 3; i++ {
		if v, ok := m.Get(strconv.Itoa(i)); !ok || v != i {
			t.Errorf("Get(%d) = %d, %v; want %d, true", i, v, ok, i)
		}
	}
	if n := m.Len(); n != 3 {
		t.Errorf("Len() = %d, want 3", n)
	}
}

// TestEmptyAndTiny: a map never written misses, and one of size 0 holds one
// key rather than none.
func TestEmptyAndTiny(t *testing.T) {
	m := New[string](0)
	if _, ok := m.Get("a"); ok || m.Len() != 0 {
		t.Fatal("an empty map remembers something")
	}
	m.Put("a", "x")
	m.Put("b", "y")
	if _, ok := m.Get("a"); ok {
		t.Error("a map of size one kept two keys")
	}
	if v, ok := m.Get("b"); !ok || v != "y" {
		t.Errorf("Get(b) = %q, %v; want y, true", v, ok)
	}
}

// TestEmptyKeyForgotten: the empty key is a key like any other, forgotten
// in its turn, so the map never holds more than its size.
func TestEmptyKeyForgotten(t *testing.T) {
	m := New[int](2)
	m.Put("", 0)
	m.Put("a", 1)
	m.Put("b", 2)
	if _, ok := m.Get(""); ok {
		t.Error("the empty key outlived its turn")
	}
	if n := m.Len(); n != 2 {
		t.Errorf("Len() = %d, want 2", n)
	}
}
