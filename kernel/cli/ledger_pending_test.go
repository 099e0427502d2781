package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/logfile"
	"github.com/ambitkernel/ambit/kernel/store"
)

// TestVerifyRefusesALogNotCopied: with entries the kernel acknowledged
// still in the log file beside the database, verifying the database alone
// would pass over them; ambitctl says so and what to do instead.
func TestVerifyRefusesALogNotCopied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := store.Open(context.Background(), path, store.DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := verifyDB(context.Background(), path, nil); err != nil || !r.OK {
		t.Fatalf("an empty journal: %+v %v", r, err)
	}
	l, err := logfile.Open(path+"-log", logfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]byte("a batch")); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if _, err := verifyDB(context.Background(), path, nil); err == nil || !strings.Contains(err.Error(), "start the kernel on it once") {
		t.Fatalf("verify beside a log not copied: %v", err)
	}
}
