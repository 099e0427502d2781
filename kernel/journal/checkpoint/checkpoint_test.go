package checkpoint_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/store"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/sumdb/note"
)

func key(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signer(t testing.TB, origin string, k ed25519.PrivateKey) *checkpoint.Signer {
	t.Helper()
	s, err := checkpoint.NewSigner(origin, k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openStore opens a kernel store in a new folder, closed when the test
// ends.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "k.db"), store.DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func head(size uint64) journal.TreeHead {
	root := bytes.Repeat([]byte{byte(size)}, 32)
	return journal.TreeHead{Size: size, Root: root}
}

func TestSignOpen(t *testing.T) {
	k := key(t)
	s := signer(t, "ambit-kernel/test", k)
	cp, err := s.Sign(head(42))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(cp.Note), "ambit-kernel/test\n42\n") {
		t.Errorf("note text:\n%s", cp.Note)
	}
	v, err := checkpoint.NewVerifier("ambit-kernel/test", k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Open(cp.Note, v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cp, got); diff != "" {
		t.Errorf("Open (-signed +opened):\n%s", diff)
	}

	otherKey, _ := checkpoint.NewVerifier("ambit-kernel/test", key(t).Public().(ed25519.PublicKey))
	otherOrigin, _ := checkpoint.NewVerifier("ambit-kernel/other", k.Public().(ed25519.PublicKey))
	for name, v := range map[string]note.Verifier{"another key": otherKey, "another origin": otherOrigin} {
		if _, err := checkpoint.Open(cp.Note, v); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("%s: Open = %v, want ErrInvalid", name, err)
		}
	}

	// No byte of a checkpoint can change, whatever the change.
	for i := range cp.Note {
		for _, flip := range []byte{0x01, 0x02, 0x20, 0x80, 0xff} {
			bad := bytes.Clone(cp.Note)
			bad[i] ^= flip
			if _, err := checkpoint.Open(bad, v); err == nil {
				t.Fatalf("byte %d xor %#x: the changed checkpoint verifies:\n%s", i, flip, bad)
			}
		}
	}
	for _, origin := range []string{"", "a b", "a+b", "a\nb"} {
		if _, err := checkpoint.NewSigner(origin, k); err == nil {
			t.Errorf("origin %q accepted", origin)
		}
	}
}

func TestDir(t *testing.T) {
	s := signer(t, "ambit-kernel/test", key(t))
	d := checkpoint.Dir(filepath.Join(t.TempDir(), "cps"))
	if _, ok, err := d.Latest(s.Verifier()); ok || err != nil {
		t.Fatalf("empty directory: latest %v, %v", ok, err)
	}
	for _, size := range []uint64{1, 5, 9, 12} {
		cp, err := s.Sign(head(size))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Write(cp); err != nil {
			t.Fatal(err)
		}
	}
	latest, ok, err := d.Latest(s.Verifier())
	if err != nil || !ok || latest.Head.Size != 12 {
		t.Fatalf("Latest = %v %v %v", latest.Head, ok, err)
	}
	at, ok, err := d.At(5, s.Verifier())
	if err != nil || !ok || at.Head.Size != 5 {
		t.Fatalf("At(5) = %v %v %v", at.Head, ok, err)
	}
	if err := d.Prune(2); err != nil {
		t.Fatal(err)
	}
	all, err := checkpoint.Load(string(d), s.Verifier())
	if err != nil {
		t.Fatal(err)
	}
	var sizes []uint64
	for _, cp := range all {
		sizes = append(sizes, cp.Head.Size)
	}
	if diff := cmp.Diff([]uint64{9, 12, 12}, sizes); diff != "" {
		t.Errorf("after pruning to 2 (-want +got):\n%s", diff)
	}
	one, err := checkpoint.Load(filepath.Join(string(d), checkpoint.Latest), s.Verifier())
	if err != nil || len(one) != 1 || one[0].Head.Size != 12 {
		t.Errorf("Load(file) = %v, %v", one, err)
	}
	// A forged file in the directory is refused, not skipped.
	if err := os.WriteFile(filepath.Join(string(d), "checkpoint-00000000000000000007"), []byte("forged\n7\nAAAA\n\n— x AAAA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.All(s.Verifier()); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("All with a forged checkpoint = %v, want ErrInvalid", err)
	}
}

// TestPublisherRacesAppends appends from many goroutines while checkpoints
// are published on every trigger at once; every checkpoint published must
// be a prefix of the final journal, and the latest must never move back.
func TestPublisherRacesAppends(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStore(t)
	s := signer(t, "ambit-kernel/test", key(t))
	d := checkpoint.Dir(filepath.Join(t.TempDir(), "cps"))
	p := checkpoint.NewPublisher(checkpoint.Options{Signer: s, Dir: d, Entries: 7, Interval: time.Millisecond}, st, checkpoint.Checkpoint{})
	runDone := make(chan error, 1)
	go func() { runDone <- p.Run(ctx) }()

	const writers, appends = 4, 60
	var wg sync.WaitGroup
	errs := make(chan error, writers*appends+2*appends)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range appends {
				errs <- st.Update(ctx, func(tx store.Tx) error {
					_, err := tx.Append(time.Now(), "test", fmt.Sprintf("w%d-%d", w, i), nil)
					return err
				})
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for range appends {
				size := st.JournalSize()
				cp, err := p.Covering(ctx, size)
				if err == nil && cp.Head.Size < size {
					err = fmt.Errorf("Covering(%d) returned a checkpoint of %d", size, cp.Head.Size)
				}
				if now := p.Latest().Head.Size; err == nil && now < last {
					err = fmt.Errorf("the latest checkpoint moved back from %d to %d", last, now)
				} else {
					last = now
				}
				errs <- err
			}
		}()
	}
	wg.Wait()
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The final publication covers the whole journal.
	if got := p.Latest().Head.Size; got != writers*appends {
		t.Errorf("latest checkpoint after Run = %d, want %d", got, writers*appends)
	}
	cps, err := d.All(s.Verifier())
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) < 3 {
		t.Errorf("only %d checkpoints published", len(cps))
	}
	r, err := st.VerifyJournal(context.Background(), checkpoint.Heads(cps))
	if err != nil || !r.OK || r.Matched != len(cps) {
		t.Errorf("journal against its %d checkpoints: %+v, %v", len(cps), r, err)
	}
}

// TestPublisherWaitsForEntries: with no interval to publish on, a
// checkpoint follows the append that brings the journal Entries past the
// latest, and none the appends before it.
func TestPublisherWaitsForEntries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStore(t)
	s := signer(t, "ambit-kernel/test", key(t))
	p := checkpoint.NewPublisher(checkpoint.Options{Signer: s, Dir: checkpoint.Dir(filepath.Join(t.TempDir(), "cps")), Entries: 3, Interval: time.Hour},
		st, checkpoint.Checkpoint{})
	runDone := make(chan error, 1)
	go func() { runDone <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Error(err)
		}
	}()
	appendOne := func(i int) {
		t.Helper()
		if err := st.Update(ctx, func(tx store.Tx) error {
			_, err := tx.Append(time.Now(), "test", fmt.Sprintf("e%d", i), nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(size uint64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); p.Latest().Note == nil || p.Latest().Head.Size != size; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the latest checkpoint covers %d entries, want %d", p.Latest().Head.Size, size)
			}
		}
	}
	waitFor(0) // Run's first publication: an empty journal
	appendOne(1)
	appendOne(2)
	time.Sleep(50 * time.Millisecond)
	if got := p.Latest().Head.Size; got != 0 {
		t.Fatalf("published a checkpoint of %d entries, short of 3", got)
	}
	appendOne(3)
	waitFor(3)
	appendOne(4)
	appendOne(5)
	appendOne(6)
	waitFor(6)
}
