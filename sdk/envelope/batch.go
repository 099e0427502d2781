package envelope

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/treehash"
	"github.com/transparency-dev/merkle/proof"
)

// maxBatch bounds the records under one signature, so an inclusion path
// is at most eight hashes.
const maxBatch = 256

const batchDomain = "ambit-envelope-batch-v1"

// batchMessage is what a batch's signature covers: its size and root.
func batchMessage(size uint64, root []byte) []byte {
	buf := make([]byte, 0, len(batchDomain)+8+len(root))
	buf = append(buf, batchDomain...)
	buf = binary.BigEndian.AppendUint64(buf, size)
	return append(buf, root...)
}

// batchRoot is the root of the batch b that a record with this encoding
// belongs to, by its inclusion path.
func batchRoot(b *receiptv1.Batch, encoding []byte) ([]byte, error) {
	if b.GetSize() < 2 {
		return nil, fmt.Errorf("a batch of %d records; one record is signed alone", b.GetSize())
	}
	for _, h := range b.GetPath() {
		if len(h) != treehash.Hasher.Size() {
			return nil, errors.New("a batch path hash is not 32 bytes")
		}
	}
	root, err := proof.RootFromInclusionProof(treehash.Hasher, b.GetIndex(), b.GetSize(), treehash.Hasher.HashLeaf(encoding), b.GetPath())
	if err != nil {
		return nil, fmt.Errorf("batch path: %w", err)
	}
	return root, nil
}

// record is one record being sealed: its signed encoding, and the
// envelope that will carry it.
type record struct {
	encoding []byte
	env      *receiptv1.Envelope
}

// seal signs recs: one record alone, several under one signature over
// their tree's root, each envelope given its path to that root.
func seal(key ed25519.PrivateKey, recs []record) error {
	if len(key) != ed25519.PrivateKeySize {
		// ed25519.Sign would panic, on the goroutine leading the batch.
		return fmt.Errorf("sign: a private key of %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	if len(recs) == 1 {
		recs[0].env.Signature = ed25519.Sign(key, recs[0].encoding)
		return nil
	}
	leaves := make([][]byte, len(recs))
	for i, r := range recs {
		leaves[i] = treehash.Hasher.HashLeaf(r.encoding)
	}
	paths := make([][][]byte, len(recs))
	root := tree(leaves, paths)
	sig := ed25519.Sign(key, batchMessage(uint64(len(recs)), root))
	for i, r := range recs {
		r.env.Signature = sig
		r.env.Batch = &receiptv1.Batch{Index: uint64(i), Size: uint64(len(recs)), Path: paths[i]}
	}
	return nil
}

// tree returns the RFC 6962 root of leaves and appends to paths[i] the
// inclusion path of leaf i, deepest hash first.
func tree(leaves [][]byte, paths [][][]byte) []byte {
	n := len(leaves)
	if n == 1 {
		return leaves[0]
	}
	k := 1 << (bits.Len(uint(n-1)) - 1) // the largest power of two below n
	left, right := tree(leaves[:k], paths[:k]), tree(leaves[k:], paths[k:])
	for i := range paths[:k] {
		paths[i] = append(paths[i], right)
	}
	for i := range paths[k:] {
		paths[k+i] = append(paths[k+i], left)
	}
	return treehash.Hasher.HashChildren(left, right)
}

// group seals the records of concurrent callers together. The first
// caller to arrive leads: it seals everything waiting (up to maxBatch
// records) under one signature, wakes those it sealed, and hands the lead
// to the next waiting caller, so no caller seals more than one batch.
type group struct {
	mu      sync.Mutex
	waiting []*sealing
	leading bool
}

// sealing is one caller's records and how it learns they are sealed (or
// why not), or that it leads.
type sealing struct {
	recs   []record
	sealed bool
	err    error
	wake   chan struct{}
}

func (g *group) seal(key ed25519.PrivateKey, recs []record) error {
	me := &sealing{recs: recs, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, me)
	if g.leading {
		g.mu.Unlock()
		<-me.wake
		if me.sealed {
			return me.err
		}
		g.mu.Lock()
	}
	g.leading = true
	g.mu.Unlock()
	// Callers already runnable reach the group before the batch is taken:
	// under load, one signature then covers them instead of one each.
	// With nothing else to run, yielding costs a trip through the
	// scheduler.
	runtime.Gosched()
	g.mu.Lock()
	var batch []*sealing
	n := 0
	for len(g.waiting) > 0 && (len(batch) == 0 || n+len(g.waiting[0].recs) <= maxBatch) {
		n += len(g.waiting[0].recs)
		batch, g.waiting = append(batch, g.waiting[0]), g.waiting[1:]
	}
	g.mu.Unlock()

	all := recs
	if len(batch) > 1 {
		all = make([]record, 0, n)
		for _, s := range batch {
			all = append(all, s.recs...)
		}
	}
	err := seal(key, all)

	for _, s := range batch {
		if s != me {
			s.sealed, s.err = true, err
			s.wake <- struct{}{}
		}
	}
	g.mu.Lock()
	if len(g.waiting) > 0 {
		g.waiting[0].wake <- struct{}{} // the lead passes on, still held
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	return err
}
