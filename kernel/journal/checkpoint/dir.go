package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ambitkernel/ambit/kernel/journal"
	"golang.org/x/mod/sumdb/note"
)

// Latest is the name of the latest checkpoint's file in a directory; each
// checkpoint is also kept as "checkpoint-<size, 20 digits>".
const Latest = "checkpoint"

const historyPrefix = Latest + "-"

// Dir is a checkpoint directory.
type Dir string

// Write stores cp atomically, under its size and as the latest.
func (d Dir) Write(cp Checkpoint) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	if err := writeAtomic(filepath.Join(string(d), historyName(cp.Head.Size)), cp.Note); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(string(d), Latest), cp.Note)
}

func historyName(size uint64) string { return fmt.Sprintf("%s%020d", historyPrefix, size) }

// writeAtomic replaces path with data: a reader sees the old file or the
// new one, never part of either, also across a crash.
func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer dir.Close()
	return dir.Sync()
}

// Latest reads and verifies the latest checkpoint; ok is false when the
// directory holds none.
func (d Dir) Latest(v note.Verifier) (cp Checkpoint, ok bool, err error) {
	path := filepath.Join(string(d), Latest)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("read checkpoint: %w", err)
	}
	cp, err = Open(data, v)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return cp, true, nil
}

// At reads and verifies the checkpoint of one size; ok is false when the
// directory holds none of that size.
func (d Dir) At(size uint64, v note.Verifier) (cp Checkpoint, ok bool, err error) {
	path := filepath.Join(string(d), historyName(size))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("read checkpoint: %w", err)
	}
	if cp, err = Open(data, v); err != nil {
		return Checkpoint{}, false, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if cp.Head.Size != size {
		return Checkpoint{}, false, fmt.Errorf("checkpoint %s: %w: it is of size %d", path, ErrInvalid, cp.Head.Size)
	}
	return cp, true, nil
}

// sizes lists the sizes of the kept checkpoints, ascending.
func (d Dir) sizes() ([]uint64, error) {
	names, err := os.ReadDir(string(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint directory: %w", err)
	}
	var out []uint64
	for _, e := range names {
		digits, ok := strings.CutPrefix(e.Name(), historyPrefix)
		if !ok || len(digits) != 20 {
			continue
		}
		if size, err := strconv.ParseUint(digits, 10, 64); err == nil {
			out = append(out, size)
		}
	}
	slices.Sort(out)
	return out, nil
}

// All reads and verifies every checkpoint in the directory, by size, and
// the latest. Any file that does not verify is an error: a checkpoint
// directory holds only what its kernel signed.
func (d Dir) All(v note.Verifier) ([]Checkpoint, error) {
	sizes, err := d.sizes()
	if err != nil {
		return nil, err
	}
	var out []Checkpoint
	for _, s := range sizes {
		cp, ok, err := d.At(s, v)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, cp)
		}
	}
	latest, ok, err := d.Latest(v)
	if err != nil {
		return nil, err
	}
	if ok {
		out = append(out, latest)
	}
	return out, nil
}

// Prune keeps the newest keep checkpoints by size (all when keep <= 0);
// the latest is always kept.
func (d Dir) Prune(keep int) error {
	if keep <= 0 {
		return nil
	}
	sizes, err := d.sizes()
	if err != nil {
		return err
	}
	for _, s := range sizes[:max(len(sizes)-keep, 0)] {
		if err := os.Remove(filepath.Join(string(d), historyName(s))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prune checkpoints: %w", err)
		}
	}
	return nil
}

// Load reads and verifies checkpoints from path: one checkpoint file, or
// a checkpoint directory (every checkpoint in it).
func Load(path string, v note.Verifier) ([]Checkpoint, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if info.IsDir() {
		cps, err := Dir(path).All(v)
		if err == nil && len(cps) == 0 {
			err = fmt.Errorf("checkpoint directory %s holds no checkpoint", path)
		}
		return cps, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	cp, err := Open(data, v)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return []Checkpoint{cp}, nil
}

// Heads returns the tree heads of checkpoints, for journal.Verify.
func Heads(cps []Checkpoint) []journal.TreeHead {
	out := make([]journal.TreeHead, len(cps))
	for i, cp := range cps {
		out[i] = cp.Head
	}
	return out
}
