package server

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"path/filepath"

	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/store"
	"go.uber.org/zap"
)

// ErrJournal marks a journal that does not verify against the kernel's own
// latest checkpoint: the kernel refuses to start on it.
var ErrJournal = errors.New("the journal does not verify against the kernel's latest checkpoint")

// openLog checks the journal against the latest checkpoint in the
// checkpoint directory and returns the publisher of the next ones. A
// journal that was truncated, rewritten or reordered since the kernel
// signed its latest checkpoint stops the kernel here, naming the entry.
func openLog(ctx context.Context, cfg *Config, st *store.Store, key ed25519.PrivateKey, log *zap.Logger) (*checkpoint.Publisher, error) {
	signer, err := checkpoint.NewSigner(cfg.origin(), key)
	if err != nil {
		return nil, err
	}
	dir := checkpoint.Dir(cfg.checkpointDir())
	latest, ok, err := dir.Latest(signer.Verifier())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	if !ok && st.JournalSize() > 0 {
		log.Warn("no checkpoint in the checkpoint directory: the journal is checked against itself only", zap.String("dir", string(dir)))
	}
	// The older checkpoints narrow down where a bad journal went wrong.
	trusted, err := dir.All(signer.Verifier())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	r, err := st.VerifyJournal(ctx, checkpoint.Heads(trusted))
	if err != nil {
		return nil, err
	}
	if !r.OK {
		return nil, fmt.Errorf("%w (%s, size %d): %s: %s; refusing to start",
			ErrJournal, filepath.Join(string(dir), checkpoint.Latest), latest.Head.Size, sqldb.Redact(cfg.Database), r.Problem)
	}
	log.Info("journal verified", zap.Int64("entries", r.Entries), zap.Int("checkpoints", r.Matched), zap.String("root", r.Head.String()))
	return checkpoint.NewPublisher(checkpoint.Options{
		Signer:   signer,
		Dir:      dir,
		Entries:  cfg.Checkpoints.EveryEntries,
		Interval: cfg.Checkpoints.Every.D(0),
		Keep:     keepOrDefault(cfg.Checkpoints.Keep),
		Log:      log.With(zap.String("component", "checkpoints")),
	}, st, latest), nil
}

func keepOrDefault(keep int) int {
	if keep == 0 {
		return 10000
	}
	return keep
}
