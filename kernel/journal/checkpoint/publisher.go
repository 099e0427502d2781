package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"go.uber.org/zap"
	"golang.org/x/mod/sumdb/note"
)

// Source is the journal a publisher signs: its committed head, its size
// without a read, and a signal once it has grown to a size.
type Source interface {
	Head(ctx context.Context) (journal.TreeHead, error)
	JournalSize() uint64
	JournalGrown(size uint64) <-chan struct{}
}

// Options configure a Publisher.
type Options struct {
	Signer *Signer
	Dir    Dir
	// Entries and Interval: a checkpoint is signed once Entries entries
	// were appended since the last, or Interval after the last when any
	// was (defaults 1000 and 1s).
	Entries  uint64
	Interval time.Duration
	// Keep is how many checkpoints the directory keeps (0: all).
	Keep int
	Log  *zap.Logger
}

// Publisher signs the journal's head and publishes it in the checkpoint
// directory. It is safe for concurrent use.
type Publisher struct {
	o   Options
	src Source

	// pmu serialises publication, so the latest never moves back.
	pmu    sync.Mutex
	mu     sync.RWMutex
	latest Checkpoint
}

// NewPublisher publishes src's checkpoints, after latest (the directory's
// latest, verified against the journal; zero when there is none).
func NewPublisher(o Options, src Source, latest Checkpoint) *Publisher {
	if o.Entries == 0 {
		o.Entries = 1000
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	return &Publisher{o: o, src: src, latest: latest}
}

// Verifier checks the publisher's checkpoints.
func (p *Publisher) Verifier() note.Verifier { return p.o.Signer.Verifier() }

// Dir is the checkpoint directory.
func (p *Publisher) Dir() Dir { return p.o.Dir }

// Latest is the latest published checkpoint (zero before the first).
func (p *Publisher) Latest() Checkpoint {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.latest
}

// Publish signs and publishes the journal's committed head, unless the
// latest checkpoint already has its size, and returns the latest.
func (p *Publisher) Publish(ctx context.Context) (Checkpoint, error) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	head, err := p.src.Head(ctx)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("publish checkpoint: %w", err)
	}
	last := p.Latest()
	switch {
	case last.Note != nil && head.Size < last.Head.Size:
		return Checkpoint{}, fmt.Errorf("publish checkpoint: the journal holds %d entries, fewer than the latest checkpoint's %d", head.Size, last.Head.Size)
	case last.Note != nil && head.Size == last.Head.Size:
		if !bytes.Equal(head.Root, last.Head.Root) {
			return Checkpoint{}, fmt.Errorf("publish checkpoint: the journal's root at size %d differs from the latest checkpoint's", head.Size)
		}
		return last, nil
	}
	cp, err := p.o.Signer.Sign(head)
	if err != nil {
		return Checkpoint{}, err
	}
	if err := p.o.Dir.Write(cp); err != nil {
		return Checkpoint{}, fmt.Errorf("publish checkpoint: %w", err)
	}
	p.mu.Lock()
	p.latest = cp
	p.mu.Unlock()
	if err := p.o.Dir.Prune(p.o.Keep); err != nil {
		p.o.Log.Warn("prune checkpoints", zap.Error(err))
	}
	return cp, nil
}

// Covering returns the latest checkpoint when it holds the first size
// entries, and publishes a new one first when it does not.
func (p *Publisher) Covering(ctx context.Context, size uint64) (Checkpoint, error) {
	if cp := p.Latest(); cp.Note != nil && cp.Head.Size >= size {
		return cp, nil
	}
	cp, err := p.Publish(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	if cp.Head.Size < size {
		return Checkpoint{}, fmt.Errorf("checkpoint: the journal holds %d entries, not %d", cp.Head.Size, size)
	}
	return cp, nil
}

// Run publishes a checkpoint once Entries entries were appended since the
// last one, or every Interval while any were, until ctx ends; then it
// publishes the final head, so that a stopped kernel's journal is covered
// to its last entry.
func (p *Publisher) Run(ctx context.Context) error {
	tick := time.NewTicker(p.o.Interval)
	defer tick.Stop()
	publish := func(ctx context.Context) {
		if _, err := p.Publish(ctx); err != nil {
			p.o.Log.Error("publish checkpoint", zap.Error(err))
		}
	}
	publish(ctx)
	for {
		select {
		case <-ctx.Done():
			publish(context.WithoutCancel(ctx))
			return nil
		case <-p.src.JournalGrown(p.Latest().Head.Size + p.o.Entries):
			if p.src.JournalSize() >= p.Latest().Head.Size+p.o.Entries {
				publish(ctx)
			}
		case <-tick.C:
			if p.src.JournalSize() > p.Latest().Head.Size {
				publish(ctx)
			}
		}
	}
}
