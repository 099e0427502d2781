package memo

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestForgetsOldest: a full map forgets its oldest key for a new one when
// none was asked for, and remembering a key again neither moves nor
// replaces it.
func TestForgetsOldest(t *testing.T) {
	m := New[int](3)
	for i := range 3 {
		m.Put(strconv.Itoa(i), i)
	}
	m.Put("0", 99) // remembered already: kept as it was, still the oldest
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

// TestKeepsWhatIsUsed: a key found since its turn last came is passed
// over once, losing its mark, and the next oldest goes instead; a key
// found again and again stays however many keys come once.
func TestKeepsWhatIsUsed(t *testing.T) {
	m := New[int](3)
	for i := range 3 {
		m.Put(strconv.Itoa(i), i)
	}
	if v, ok := m.Get("0"); !ok || v != 0 {
		t.Fatalf("Get(0) = %d, %v; want 0, true", v, ok)
	}
	m.Put("3", 3) // 0 is passed over, 1 goes
	if _, ok := m.Get("1"); ok {
		t.Error("1, never asked for, outlived 0, which was")
	}
	m.Put("4", 4) // 2 goes; 0 lost its mark
	m.Put("5", 5) // and now 0 goes
	for k, want := range map[string]bool{"0": false, "2": false, "3": true, "4": true, "5": true} {
		if _, ok := m.Get(k); ok != want {
			t.Errorf("Get(%s) found = %v, want %v", k, ok, want)
		}
	}

	// What is only peeked at keeps its turn.
	m.Put("6", 6) // 3 goes
	if v, ok := m.Peek("4"); !ok || v != 4 {
		t.Fatalf("Peek(4) = %d, %v; want 4, true", v, ok)
	}
	m.Put("7", 7) // 4 goes: peeking at it did not mark it
	if _, ok := m.Peek("4"); ok {
		t.Error("a key only peeked at outlived its turn")
	}

	hot := New[int](4)
	for i := range 1000 {
		if _, ok := hot.Get("hot"); !ok && i > 0 {
			t.Fatalf("the key asked for on every put was forgotten after %d others", i)
		}
		hot.Put("hot", -1)
		hot.Put(strconv.Itoa(i), i)
	}
	if n := hot.Len(); n != 4 {
		t.Errorf("Len() = %d, want 4", n)
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

// TestBusyKeysStay: with every other key asked for one of busy ones, half
// as many as the map holds, and the rest drawn from four times its size,
// the busy keys are found more than four times in five (0.87 here); a map
// forgetting its oldest key, used or not, found them about two times in
// three (0.68).
func TestBusyKeysStay(t *testing.T) {
	const size, busy, all = 8192, 4096, 32768
	m := New[int](size)
	rng := rand.New(rand.NewPCG(1, 2))
	var asked, found int
	for i := range 400_000 {
		k := rng.IntN(all)
		if i%2 == 0 {
			k = rng.IntN(busy)
		}
		key := strconv.Itoa(k)
		_, ok := m.Get(key)
		if !ok {
			m.Put(key, k)
		}
		if i%2 == 0 && i > 100_000 {
			asked++
			if ok {
				found++
			}
		}
	}
	if rate := float64(found) / float64(asked); rate < 0.8 {
		t.Errorf("busy keys found %.2f of the times asked, want at least 0.8", rate)
	}
}
