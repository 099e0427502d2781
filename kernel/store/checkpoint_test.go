package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCheckpointsOffTheWriter: commits that take the WAL well past
// SQLite's own trigger (1,000 pages) leave the database file as it was,
// so no commit waited for a checkpoint; the background checkpoint then
// copies them into the file.
func TestCheckpointsOffTheWriter(t *testing.T) {
	ctx := context.Background()
	const rows, body = 800, 8 << 10 // some 1,600 pages of 4 KiB
	fill := func(s *Store) {
		t.Helper()
		at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
		for i := range rows / 10 {
			if err := s.Update(ctx, func(tx Tx) error {
				for j := range 10 {
					if _, err := tx.Append(at, "test", fmt.Sprintf("r-%d-%d", i, j), make([]byte, body)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	size := func(path string) int64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	const written = rows * body

	t.Run("held back", func(t *testing.T) {
		defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
		checkpointEvery = time.Hour
		path := filepath.Join(t.TempDir(), "k.db")
		s, err := Open(ctx, path, DurabilityNormal)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		before := size(path)
		fill(s)
		// What the log file acknowledged, the copier writes to the WAL.
		if err := s.settle(ctx); err != nil {
			t.Fatal(err)
		}
		if got := size(path); got != before {
			t.Fatalf("the database file went from %d to %d bytes during the commits: a commit checkpointed", before, got)
		}
		if wal := size(path + "-wal"); wal < written {
			t.Fatalf("the WAL holds %d bytes, want at least the %d written", wal, written)
		}
		if err := s.checkpoints.checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		if got := size(path); got < written {
			t.Fatalf("after a checkpoint the database file holds %d bytes, want at least %d", got, written)
		}
	})

	t.Run("in the background", func(t *testing.T) {
		defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
		checkpointEvery = 10 * time.Millisecond
		path := filepath.Join(t.TempDir(), "k.db")
		s, err := Open(ctx, path, DurabilityFull)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fill(s)
		for deadline := time.Now().Add(10 * time.Second); size(path) < written; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no background checkpoint copied the WAL within 10s: the file holds %d bytes", size(path))
			}
		}
	})
}

// TestCheckpointFailureReported: a background checkpoint that fails is
// reported to the hook OnCheckpointError set, and commits go on.
func TestCheckpointFailureReported(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = 10 * time.Millisecond
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "k.db"), DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The checkpoints' own connection gone, each tick fails.
	if err := s.checkpoints.db.Close(); err != nil {
		t.Fatal(err)
	}
	reported(t, s.OnCheckpointError, "SQLite WAL")
	if err := s.Update(ctx, func(tx Tx) error {
		_, err := tx.Append(time.Now(), "test", "after", []byte("x"))
		return err
	}); err != nil {
		t.Fatalf("a commit after failed checkpoints: %v", err)
	}
}
