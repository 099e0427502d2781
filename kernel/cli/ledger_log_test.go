package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/logfile"
	"github.com/ambitkernel/ambit/kernel/store"
)

// TestVerifyBesideALog: a log file left by a kernel that stopped without
// a clean shutdown is verified past when the database already holds all
// it does, and refused, saying what to do, when it holds entries the
// database does not: verifying the database alone would pass over them.
func TestVerifyBesideALog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "k.db")
	s, err := store.Open(ctx, path, store.DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := verifyDB(ctx, path, nil); err != nil || !r.OK {
		t.Fatalf("an empty journal: %+v %v", r, err)
	}
	empty := saveDB(t, path)

	// A log as a crash leaves it: its entries acknowledged, here copied.
	s, err = store.Open(ctx, path, store.DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx store.Tx) error {
		for _, ref := range []string{"a", "b"} {
			if _, err := tx.Append(time.Now(), "test", ref, []byte(ref)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if entries, err := s.Entries(ctx, 0, 0); err != nil || len(entries) != 2 {
		t.Fatalf("entries %d (%v), want 2", len(entries), err)
	}
	log, err := os.ReadFile(path + "-log")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-log", log, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := verifyDB(ctx, path, nil); err != nil || !r.OK {
		t.Fatalf("verify beside a log the database holds all of: %+v %v", r, err)
	}

	// The same log beside the database as it was before the copy.
	restoreDB(t, path, empty)
	if err := os.WriteFile(path+"-log", log, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = verifyDB(ctx, path, nil)
	if err == nil || !strings.Contains(err.Error(), "start the kernel on it once") || !strings.Contains(err.Error(), "through 2") {
		t.Fatalf("verify beside a log not copied: %v", err)
	}

	// A log whose record is not the store's.
	if err := os.Remove(path + "-log"); err != nil {
		t.Fatal(err)
	}
	l, err := logfile.Open(path+"-log", logfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]byte("a batch")); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if _, err := verifyDB(ctx, path, nil); err == nil || !strings.Contains(err.Error(), "record 0") {
		t.Fatalf("verify beside a log it cannot read: %v", err)
	}
}

// saveDB keeps the database files at path (the log file aside).
func saveDB(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	saved := map[string][]byte{}
	for _, f := range files {
		if strings.HasSuffix(f, "-log") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		saved[f] = b
	}
	return saved
}

// restoreDB puts back the files saveDB kept, removing all others at path.
func restoreDB(t *testing.T, path string, saved map[string][]byte) {
	t.Helper()
	files, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	for f, b := range saved {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
