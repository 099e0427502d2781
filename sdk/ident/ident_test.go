package ident_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/ident"
)

func TestNew(t *testing.T) {
	before := time.Now().UnixMilli()
	a := ident.New(10)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) {
		t.Fatalf("New(10) = %q, want 32 hex digits", a)
	}
	ms, err := strconv.ParseInt(a[:12], 16, 64)
	if err != nil || ms < before || ms > time.Now().UnixMilli() {
		t.Errorf("New(10) = %q begins with %d (%v), not the time it was made (%d..)", a, ms, err, before)
	}
	if b := ident.New(6); len(b) != 24 {
		t.Errorf("New(6) = %q, want 24 hex digits", b)
	}
	// Identifiers of one millisecond differ; a later millisecond sorts
	// after.
	seen := map[string]bool{}
	for range 1000 {
		id := ident.New(6)
		if seen[id] {
			t.Fatalf("New(6) repeated %q", id)
		}
		seen[id] = true
	}
	time.Sleep(2 * time.Millisecond)
	if c := ident.New(10); c <= a {
		t.Errorf("New(10) made later = %q, sorts before %q", c, a)
	}
}
