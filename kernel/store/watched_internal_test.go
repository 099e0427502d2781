package store

import (
	"strings"
	"testing"
)

// TestCompareWatched: records sort as their names do, "source/key",
// including sources that are one another's prefix, whichever byte follows.
func TestCompareWatched(t *testing.T) {
	sources := []string{"", "a", "a-b", "a.b", "a_b", "a0", "aB", "ab", "claims", "claims_db", "claims-db", "a/b"}
	keys := []string{"", "1", "C-1", "C/1", "b", "z", "-"}
	var ws []Watched
	for _, s := range sources {
		for _, k := range keys {
			ws = append(ws, Watched{Source: s, Key: k})
		}
	}
	for _, a := range ws {
		for _, b := range ws {
			if got, want := compareWatched(a, b), strings.Compare(a.Record(), b.Record()); got != want {
				t.Errorf("compareWatched(%q, %q) = %d, want %d", a.Record(), b.Record(), got, want)
			}
		}
	}
}

func FuzzCompareWatched(f *testing.F) {
	f.Add("a", "z", "a-b", "c")
	f.Add("claims", "C-1", "claims_db", "C-1")
	f.Fuzz(func(t *testing.T, s1, k1, s2, k2 string) {
		a, b := Watched{Source: s1, Key: k1}, Watched{Source: s2, Key: k2}
		if got, want := compareWatched(a, b), strings.Compare(a.Record(), b.Record()); got != want {
			t.Errorf("compareWatched(%q, %q) = %d, want %d", a.Record(), b.Record(), got, want)
		}
	})
}
