package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/ambitkernel/ambit/kernel/journal/bundle"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	logv1 "github.com/ambitkernel/ambit/proto/gen/ambit/log/v1"
	"google.golang.org/protobuf/proto"
)

func runReceiptExport(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "receipt export")
	var g govFlags
	g.register(fs)
	out := fs.String("out", "", "write the bundle here (default RECEIPT_ID.bundle)")
	cpOut := fs.String("checkpoint-out", "", "also write the checkpoint the bundle is proven against here")
	size := fs.Uint64("tree-size", 0, "prove against the kernel's checkpoint of this size (default: its latest)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: receipt export [flags] RECEIPT_ID", ErrUsage)
	}
	id := fs.Arg(0)
	if *out == "" {
		*out = id + ".bundle"
	}
	var resp *kernelv1.ExportReceiptResponse
	err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
		resp, err = c.ExportReceipt(ctx, &kernelv1.ExportReceiptRequest{ReceiptId: id, TreeSize: *size})
		return err
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	data, err := bundle.Marshal(resp.GetBundle())
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, data, 0o600); err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	if *cpOut != "" {
		if err := os.WriteFile(*cpOut, resp.GetBundle().GetCheckpoint(), 0o600); err != nil {
			return fmt.Errorf("export %s: %w", id, err)
		}
	}
	b := resp.GetBundle()
	fmt.Fprintf(env.Stdout, "wrote %s: %s entry %d, proven against the checkpoint of size %d\n", *out, b.GetEntry().GetKind(), b.GetEntry().GetSeq(), b.GetInclusion().GetTreeSize())
	return nil
}

func runReceiptVerify(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "receipt verify")
	var k keyFlags
	k.register(fs, nil)
	cp := fs.String("checkpoint", "", "a checkpoint you hold (e.g. a witness's); the bundle must be proven against its tree")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: receipt verify [flags] BUNDLE", ErrUsage)
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	ring, err := k.ring()
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		fmt.Fprintf(env.Stdout, "FAIL  %s: %s\n", fs.Arg(0), fmt.Sprintf(format, args...))
		return ErrFailed
	}
	// The log's verifier comes from the held checkpoint when there is one:
	// then the bundle's checkpoint must be of the same log.
	var held *checkpoint.Checkpoint
	verifierNote := bundleNote(data)
	if *cp != "" {
		if verifierNote, err = os.ReadFile(*cp); err != nil {
			return fmt.Errorf("receipt verify: %w", err)
		}
	}
	if verifierNote == nil {
		return fail("the bundle does not decode")
	}
	v, err := k.logVerifier(ring, verifierNote)
	if err != nil {
		return fail("%v", err)
	}
	if *cp != "" {
		c, err := checkpoint.Open(verifierNote, v)
		if err != nil {
			return fail("checkpoint %s: %v", *cp, err)
		}
		held = &c
	}
	got, err := bundle.Verify(data, ring, v)
	if err != nil {
		return fail("%v", err)
	}
	if held != nil && (held.Head.Size != got.Checkpoint.Head.Size || held.Head.String() != got.Checkpoint.Head.String()) {
		return fail("the bundle is proven against the tree of size %d (root %s), not the checkpoint %s of size %d (root %s): export it with --tree-size %d",
			got.Checkpoint.Head.Size, got.Checkpoint.Head, *cp, held.Head.Size, held.Head, held.Head.Size)
	}
	fmt.Fprintf(env.Stdout, "OK  %s %s signed by %s; journal entry %d (leaf %d) is in %s at size %d, root %s\n",
		strings.TrimPrefix(string(got.Receipt.ProtoReflect().Descriptor().FullName()), "ambit.receipt.v1."), got.Entry.Ref, got.KeyID,
		got.Entry.Seq, got.Entry.Seq-1, got.Checkpoint.Origin, got.Checkpoint.Head.Size, got.Checkpoint.Head)
	return nil
}

// bundleNote is the checkpoint note a bundle carries (nil when the bundle
// does not decode): only its origin is read from it here, and the
// signature check decides.
func bundleNote(data []byte) []byte {
	var b logv1.ReceiptBundle
	if proto.Unmarshal(data, &b) != nil {
		return nil
	}
	return b.GetCheckpoint()
}
