package witness

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"
)

// Refusals.
var (
	// ErrRolledBack: the checkpoint is smaller than one already seen.
	ErrRolledBack = errors.New("the log was rolled back")
	// ErrForked: the checkpoint does not extend the last one seen.
	ErrForked = errors.New("the log is not an extension of what the witness saw")
	// ErrOtherLog: the folder follows another log key.
	ErrOtherLog = errors.New("the witness follows another log")
)

const vkeyFile = "log.vkey"

// Witness is one witness folder.
type Witness struct {
	dir checkpoint.Dir
	v   note.Verifier
}

// Open opens the witness folder dir. vkey is the log's verifier key
// (origin+hash+key): pinned in the folder on first use, and required to be
// the pinned one afterwards; empty uses the pinned key.
func Open(dir, vkey string) (*Witness, error) {
	path := filepath.Join(dir, vkeyFile)
	pinned, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if vkey == "" {
			return nil, fmt.Errorf("witness %s: no log key pinned yet: give the kernel's key", dir)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("witness %s: %w", dir, err)
		}
		if err := os.WriteFile(path, []byte(vkey+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("witness %s: %w", dir, err)
		}
	case err != nil:
		return nil, fmt.Errorf("witness %s: %w", dir, err)
	default:
		have := strings.TrimSpace(string(pinned))
		if vkey != "" && vkey != have {
			return nil, fmt.Errorf("%w: %s pins %q, not %q", ErrOtherLog, path, have, vkey)
		}
		vkey = have
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("witness %s: log key %q: %w", dir, vkey, err)
	}
	return &Witness{dir: checkpoint.Dir(dir), v: v}, nil
}

// Pinned reports whether the witness folder dir has pinned a log key.
func Pinned(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, vkeyFile))
	return err == nil
}

// Verifier checks the log's checkpoints.
func (w *Witness) Verifier() note.Verifier { return w.v }

// Latest is the last checkpoint the witness accepted; ok is false before
// the first.
func (w *Witness) Latest() (cp checkpoint.Checkpoint, ok bool, err error) {
	return w.dir.Latest(w.v)
}

// Update accepts a signed checkpoint when hashes prove it consistent with
// the last one accepted (the first is accepted as is), and keeps a copy.
// It refuses a smaller checkpoint, another root at the same size, and any
// checkpoint the proof does not link, changing nothing.
func (w *Witness) Update(signed []byte, hashes [][]byte) (checkpoint.Checkpoint, error) {
	cp, err := checkpoint.Open(signed, w.v)
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	last, ok, err := w.Latest()
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	if ok {
		if err := consistent(last.Head, cp.Head, hashes); err != nil {
			return checkpoint.Checkpoint{}, err
		}
	}
	if err := w.dir.Write(cp); err != nil {
		return checkpoint.Checkpoint{}, err
	}
	return cp, nil
}

func consistent(last, next journal.TreeHead, hashes [][]byte) error {
	switch {
	case next.Size < last.Size:
		return fmt.Errorf("%w: the checkpoint holds %d entries, the witness saw %d", ErrRolledBack, next.Size, last.Size)
	case next.Size == last.Size:
		if !bytes.Equal(next.Root, last.Root) {
			return fmt.Errorf("%w: two checkpoints of %d entries with different roots", ErrForked, next.Size)
		}
		return nil
	}
	if err := proof.VerifyConsistency(journal.Hasher, last.Size, next.Size, hashes, last.Root, next.Root); err != nil {
		return fmt.Errorf("%w: from %d to %d entries: %w", ErrForked, last.Size, next.Size, err)
	}
	return nil
}
