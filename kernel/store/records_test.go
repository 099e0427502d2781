package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// openFresh opens a new embedded store, closed when the test ends.
func openFresh(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "k.db"), DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestWrittenVersionKept: a record version an update writes is what memory
// holds once the update commits, so the decision that cites the evidence
// recorded with it reads it without a statement; an update rolled back
// leaves memory as it was; and memory holds at most maxCached versions.
func TestWrittenVersionKept(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	key := RecordKey("claims", "C-1")
	held := func() (string, bool) {
		s.mirror.mu.Lock()
		defer s.mirror.mu.Unlock()
		v, ok := s.mirror.records[key]
		return v, ok
	}
	set := func(version string, fail error) error {
		return s.Update(ctx, func(tx Tx) error {
			if err := tx.SetRecordVersion("claims", "C-1", version, t0); err != nil {
				return err
			}
			return fail
		})
	}
	if err := set("v1", nil); err != nil {
		t.Fatal(err)
	}
	if v, ok := held(); !ok || v != "v1" {
		t.Fatalf("memory holds %q %v after writing v1, want v1", v, ok)
	}
	if err := set("v2", nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := held(); v != "v2" {
		t.Fatalf("memory holds %q after writing v2, want v2", v)
	}
	refused := errors.New("refused")
	if err := set("v3", refused); !errors.Is(err, refused) {
		t.Fatalf("update = %v, want it refused", err)
	}
	if v, _ := held(); v != "v2" {
		t.Fatalf("memory holds %q after a rolled-back write of v3, want v2", v)
	}
	// Memory and the table agree: a statement reads v2 too.
	var v string
	if err := s.ro.QueryRowContext(ctx, `SELECT state_version FROM records WHERE source = 'claims' AND record_key = 'C-1'`).Scan(&v); err != nil || v != "v2" {
		t.Fatalf("the table holds %q, %v; want v2", v, err)
	}

	// Full memory forgets an eighth of the others when a new version is
	// written.
	s.mirror.mu.Lock()
	before := len(s.mirror.records)
	for i := range maxCached {
		s.mirror.records[fmt.Sprint("other/", i)] = "v"
	}
	s.mirror.mu.Unlock()
	if err := s.Update(ctx, func(tx Tx) error { return tx.SetRecordVersion("claims", "C-2", "w1", t0) }); err != nil {
		t.Fatal(err)
	}
	s.mirror.mu.Lock()
	n, w := len(s.mirror.records), s.mirror.records[RecordKey("claims", "C-2")]
	s.mirror.mu.Unlock()
	if want := before + maxCached - maxCached/8 + 1; n != want || w != "w1" {
		t.Errorf("after writing past the bound memory holds %d versions (C-2: %q), want %d, C-2's w1 among them", n, w, want)
	}
}
