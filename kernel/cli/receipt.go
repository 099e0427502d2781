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
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
)

// receiptExportOptions are receipt export's flags.
type receiptExportOptions struct {
	gov               govFlags
	out, checkpointTo string
	treeSize          uint64
}

func receiptExportCmd(env *Env) *cobra.Command {
	cmd := leaf("export RECEIPT_ID", "fetch a receipt from the kernel as a bundle that verifies offline")
	var o receiptExportOptions
	fs := cmd.Flags()
	o.gov.register(fs)
	fs.StringVar(&o.out, "out", "", "write the bundle here (default RECEIPT_ID.bundle)")
	fs.StringVar(&o.checkpointTo, "checkpoint-out", "", "also write the checkpoint the bundle is proven against here")
	fs.Uint64Var(&o.treeSize, "tree-size", 0, "prove against the kernel's checkpoint of this size (default: its latest)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runReceiptExport(cmd.Context(), env, &o, args) }
	return cmd
}

func runReceiptExport(ctx context.Context, env *Env, o *receiptExportOptions, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: receipt export [flags] RECEIPT_ID", ErrUsage)
	}
	out, cpOut, size := o.out, o.checkpointTo, o.treeSize
	id := args[0]
	if out == "" {
		out = id + ".bundle"
	}
	var resp *kernelv1.ExportReceiptResponse
	err := o.gov.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
		resp, err = c.ExportReceipt(ctx, &kernelv1.ExportReceiptRequest{ReceiptId: id, TreeSize: size})
		return err
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	data, err := bundle.Marshal(resp.GetBundle())
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	if cpOut != "" {
		if err := os.WriteFile(cpOut, resp.GetBundle().GetCheckpoint(), 0o600); err != nil {
			return fmt.Errorf("export %s: %w", id, err)
		}
	}
	b := resp.GetBundle()
	fmt.Fprintf(env.Stdout, "wrote %s: %s entry %d, proven against the checkpoint of size %d\n", out, b.GetEntry().GetKind(), b.GetEntry().GetSeq(), b.GetInclusion().GetTreeSize())
	return nil
}

func receiptVerifyCmd(env *Env) *cobra.Command {
	cmd := leaf("verify BUNDLE", "verify a receipt bundle offline: signatures, checkpoint and inclusion proof")
	var k keyFlags
	k.register(cmd.Flags(), nil)
	cp := cmd.Flags().String("checkpoint", "", "a checkpoint you hold (e.g. a witness's); the bundle must be proven against its tree")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return runReceiptVerify(env, &k, *cp, args) }
	return cmd
}

func runReceiptVerify(env *Env, k *keyFlags, cpFile string, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: receipt verify [flags] BUNDLE", ErrUsage)
	}
	bundleFile := args[0]
	data, err := os.ReadFile(bundleFile)
	if err != nil {
		return fmt.Errorf("receipt verify: %w", err)
	}
	ring, err := k.ring()
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		fmt.Fprintf(env.Stdout, "FAIL  %s: %s\n", bundleFile, fmt.Sprintf(format, args...))
		return ErrFailed
	}
	// The log's verifier comes from the held checkpoint when there is one:
	// then the bundle's checkpoint must be of the same log.
	var held *checkpoint.Checkpoint
	verifierNote := bundleNote(data)
	if cpFile != "" {
		if verifierNote, err = os.ReadFile(cpFile); err != nil {
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
	if cpFile != "" {
		c, err := checkpoint.Open(verifierNote, v)
		if err != nil {
			return fail("checkpoint %s: %v", cpFile, err)
		}
		held = &c
	}
	got, err := bundle.Verify(data, ring, v)
	if err != nil {
		return fail("%v", err)
	}
	if held != nil && (held.Head.Size != got.Checkpoint.Head.Size || held.Head.String() != got.Checkpoint.Head.String()) {
		return fail("the bundle is proven against the tree of size %d (root %s), not the checkpoint %s of size %d (root %s): export it with --tree-size %d",
			got.Checkpoint.Head.Size, got.Checkpoint.Head, cpFile, held.Head.Size, held.Head, held.Head.Size)
	}
	together := ""
	if b := got.Batch; b != nil {
		together = fmt.Sprintf(" (record %d of %d signed together)", b.GetIndex()+1, b.GetSize())
	}
	fmt.Fprintf(env.Stdout, "OK  %s %s signed by %s%s; journal entry %d (leaf %d) is in %s at size %d, root %s\n",
		strings.TrimPrefix(string(got.Receipt.ProtoReflect().Descriptor().FullName()), "ambit.receipt.v1."), got.Entry.Ref, got.KeyID, together,
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
