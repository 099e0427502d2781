package bundle

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	logv1 "github.com/ambitkernel/ambit/proto/gen/ambit/log/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Export errors.
var (
	// ErrNotFound: no receipt entry has the identifier.
	ErrNotFound = errors.New("receipt not found")
	// ErrNoCheckpoint: the kernel signed no checkpoint of the asked size,
	// or that size does not hold the receipt.
	ErrNoCheckpoint = errors.New("no checkpoint of that size holds the receipt")
)

// Source is what Export reads from the store.
type Source interface {
	EntriesWithRef(ctx context.Context, ref string, kinds ...string) ([]journal.Entry, error)
	InclusionProof(ctx context.Context, index, size uint64) ([][]byte, error)
}

// Export builds the bundle of the receipt whose entry (of one of kinds)
// has ref id, proven against the checkpoint of treeSize, or against the
// latest checkpoint (published first when it does not hold the entry)
// when treeSize is 0.
func Export(ctx context.Context, src Source, pub *checkpoint.Publisher, id string, kinds []string, treeSize uint64) (*logv1.ReceiptBundle, error) {
	entries, err := src.EntriesWithRef(ctx, id, kinds...)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e := entries[0]
	var env receiptv1.Envelope
	if err := proto.Unmarshal(e.Body, &env); err != nil {
		return nil, fmt.Errorf("export %s: entry %d: %w", id, e.Seq, err)
	}
	var cp checkpoint.Checkpoint
	if treeSize == 0 {
		if cp, err = pub.Covering(ctx, uint64(e.Seq)); err != nil {
			return nil, fmt.Errorf("export %s: %w", id, err)
		}
	} else {
		var ok bool
		cp, ok, err = pub.Dir().At(treeSize, pub.Verifier())
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", id, err)
		}
		if !ok || treeSize < uint64(e.Seq) {
			return nil, fmt.Errorf("%w: %s is entry %d, tree size %d", ErrNoCheckpoint, id, e.Seq, treeSize)
		}
	}
	index := uint64(e.Seq) - 1
	hashes, err := src.InclusionProof(ctx, index, cp.Head.Size)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", id, err)
	}
	return &logv1.ReceiptBundle{
		Envelope:   &env,
		Entry:      EntryProto(e),
		LeafIndex:  index,
		Inclusion:  &logv1.InclusionProof{LeafIndex: index, TreeSize: cp.Head.Size, Hashes: hashes},
		Checkpoint: cp.Note,
	}, nil
}

// EntryProto is a journal entry on the wire.
func EntryProto(e journal.Entry) *ledgerv1.Entry {
	return &ledgerv1.Entry{
		Seq: e.Seq, RecordedAt: timestamppb.New(e.At), Kind: e.Kind, Ref: e.Ref,
		Body: e.Body, Hash: hex.EncodeToString(e.LeafHash),
	}
}

// CheckpointProto is a checkpoint on the wire.
func CheckpointProto(cp checkpoint.Checkpoint) *logv1.Checkpoint {
	return &logv1.Checkpoint{Note: cp.Note, Origin: cp.Origin, Size: cp.Head.Size, RootHash: cp.Head.Root}
}

// Marshal is a bundle's file: its deterministic binary encoding.
func Marshal(b *logv1.ReceiptBundle) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(b)
}

// Verified is what a bundle proves.
type Verified struct {
	// Receipt is the decoded payload; KeyID signed it, alone or, when
	// Batch is set, with the other records of that batch.
	Receipt proto.Message
	KeyID   string
	Batch   *receiptv1.Batch
	Entry   journal.Entry
	// Checkpoint holds the entry.
	Checkpoint checkpoint.Checkpoint
}

// Verify checks a bundle file offline: its encoding is canonical; the
// checkpoint is signed by the log's key (v); the envelope is signed by a
// key in signers and its payload is a registered message; the journal
// entry records exactly that envelope, at the bundle's leaf index; and
// the entry is in the checkpoint's tree.
func Verify(data []byte, signers envelope.Keyring, v note.Verifier) (Verified, error) {
	var b logv1.ReceiptBundle
	if err := proto.Unmarshal(data, &b); err != nil {
		return Verified{}, fmt.Errorf("bundle does not decode: %w", err)
	}
	if again, err := Marshal(&b); err != nil || !bytes.Equal(again, data) {
		return Verified{}, errors.New("bundle is not in canonical form: it was changed after it was exported")
	}
	cp, err := checkpoint.Open(b.GetCheckpoint(), v)
	if err != nil {
		return Verified{}, fmt.Errorf("bundle's checkpoint: %w", err)
	}
	env := b.GetEnvelope()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(env.GetPayloadType()))
	if err != nil {
		return Verified{}, fmt.Errorf("receipt: unknown payload type %q", env.GetPayloadType())
	}
	receipt := mt.New().Interface()
	if err := signers.Open(env, "", receipt); err != nil {
		return Verified{}, fmt.Errorf("receipt: %w", err)
	}
	e, err := entryOf(b.GetEntry())
	if err != nil {
		return Verified{}, err
	}
	var logged receiptv1.Envelope
	if err := proto.Unmarshal(e.Body, &logged); err != nil || !proto.Equal(&logged, env) {
		return Verified{}, fmt.Errorf("journal entry %d does not record this receipt", e.Seq)
	}
	index, size := b.GetLeafIndex(), cp.Head.Size
	switch {
	case uint64(e.Seq) != index+1:
		return Verified{}, fmt.Errorf("journal entry %d is not leaf %d", e.Seq, index)
	case b.GetInclusion().GetLeafIndex() != index || b.GetInclusion().GetTreeSize() != size:
		return Verified{}, fmt.Errorf("inclusion proof is for leaf %d in a tree of %d, not leaf %d in the checkpoint's %d",
			b.GetInclusion().GetLeafIndex(), b.GetInclusion().GetTreeSize(), index, size)
	case hex.EncodeToString(e.LeafHash) != b.GetEntry().GetHash():
		return Verified{}, fmt.Errorf("journal entry %d: its hash %q is not its content's", e.Seq, b.GetEntry().GetHash())
	}
	if err := proof.VerifyInclusion(journal.Hasher, index, size, e.LeafHash, b.GetInclusion().GetHashes(), cp.Head.Root); err != nil {
		return Verified{}, fmt.Errorf("journal entry %d is not in the checkpoint's tree of %d: %w", e.Seq, size, err)
	}
	return Verified{Receipt: receipt, KeyID: env.GetKeyId(), Batch: env.GetBatch(), Entry: e, Checkpoint: cp}, nil
}

// entryOf is the journal entry a bundle carries, with its leaf hash
// computed from its content.
func entryOf(p *ledgerv1.Entry) (journal.Entry, error) {
	if err := p.GetRecordedAt().CheckValid(); err != nil {
		return journal.Entry{}, fmt.Errorf("journal entry: recorded_at: %w", err)
	}
	if p.GetPrevHash() != "" {
		return journal.Entry{}, errors.New("journal entry: prev_hash must be empty")
	}
	e := journal.Entry{Seq: p.GetSeq(), At: p.GetRecordedAt().AsTime().UTC(), Kind: p.GetKind(), Ref: p.GetRef(), Body: p.GetBody()}
	if e.Seq < 1 {
		return journal.Entry{}, fmt.Errorf("journal entry: position %d", e.Seq)
	}
	e.LeafHash = journal.LeafHash(&e)
	return e, nil
}
