package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/ambitkernel/ambit/kernel/journal/witness"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	logv1 "github.com/ambitkernel/ambit/proto/gen/ambit/log/v1"
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
	"google.golang.org/protobuf/proto"
)

// witnessOptions are witness's flags.
type witnessOptions struct {
	gov                    govFlags
	keys                   keyFlags
	dir, checkpoint, proof string
}

func witnessCmd(env *Env) *cobra.Command {
	cmd := leaf("witness --dir DIR", "check that the kernel's latest checkpoint extends the last one this witness kept")
	var o witnessOptions
	fs := cmd.Flags()
	o.gov.register(fs)
	o.keys.register(fs, &o.gov.pkiDir)
	fs.StringVar(&o.dir, "dir", "", "the witness's own folder (required)")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "check this checkpoint file instead of fetching the kernel's latest")
	fs.StringVar(&o.proof, "proof", "", "with --checkpoint: a consistency proof (binary ambit.log.v1.ConsistencyProof) from the last size the witness saw")
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runWitness(cmd.Context(), env, &o, args) }
	return cmd
}

func runWitness(ctx context.Context, env *Env, o *witnessOptions, args []string) error {
	g, k, dir, cpFile, proofFile := &o.gov, &o.keys, &o.dir, &o.checkpoint, &o.proof
	if *dir == "" || len(args) != 0 || (*proofFile != "" && *cpFile == "") {
		return fmt.Errorf("%w: witness --dir DIR [--kernel ADDR | --checkpoint CP [--proof FILE]]", ErrUsage)
	}
	if err := g.withContext(); err != nil {
		return err
	}
	w, err := openWitness(*dir, k, func() ([]byte, error) {
		if *cpFile != "" {
			return os.ReadFile(*cpFile)
		}
		var resp *kernelv1.GetCheckpointResponse
		err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
			resp, err = c.GetCheckpoint(ctx, &kernelv1.GetCheckpointRequest{})
			return err
		})
		return resp.GetCheckpoint().GetNote(), err
	})
	if err != nil {
		return err
	}
	last, seen, err := w.Latest()
	if err != nil {
		return err
	}
	var signed []byte
	var hashes [][]byte
	if *cpFile != "" {
		if signed, err = os.ReadFile(*cpFile); err != nil {
			return fmt.Errorf("witness: %w", err)
		}
		if *proofFile != "" {
			data, err := os.ReadFile(*proofFile)
			if err != nil {
				return fmt.Errorf("witness: %w", err)
			}
			var p logv1.ConsistencyProof
			if err := proto.Unmarshal(data, &p); err != nil {
				return fmt.Errorf("witness: proof %s: %w", *proofFile, err)
			}
			if p.GetFromSize() != last.Head.Size {
				return fmt.Errorf("witness: the proof starts at size %d, the witness saw %d", p.GetFromSize(), last.Head.Size)
			}
			hashes = p.GetHashes()
		}
	} else {
		var resp *kernelv1.GetConsistencyProofResponse
		err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
			resp, err = c.GetConsistencyProof(ctx, &kernelv1.GetConsistencyProofRequest{FromSize: last.Head.Size})
			return err
		})
		if err != nil {
			// A kernel whose log is smaller than what the witness saw
			// cannot prove anything from that size: it was rolled back.
			return witnessRefused(env, fmt.Errorf("the kernel cannot prove its log extends the %d entries the witness saw: %w", last.Head.Size, err))
		}
		signed, hashes = resp.GetCheckpoint().GetNote(), resp.GetProof().GetHashes()
	}
	cp, err := w.Update(signed, hashes)
	if err != nil {
		return witnessRefused(env, err)
	}
	was := "first checkpoint"
	if seen {
		was = fmt.Sprintf("extends %d", last.Head.Size)
	}
	fmt.Fprintf(env.Stdout, "OK  %s at size %d, root %s (%s); kept in %s\n", cp.Origin, cp.Head.Size, cp.Head, was, *dir)
	return nil
}

func witnessRefused(env *Env, err error) error {
	fmt.Fprintf(env.Stdout, "REFUSED  %v\n", err)
	return ErrFailed
}

// openWitness opens the witness folder; on first use it pins the kernel's
// checkpoint key, from --keys or --pki, under the origin of the first
// checkpoint (or --origin).
func openWitness(dir string, k *keyFlags, first func() ([]byte, error)) (*witness.Witness, error) {
	if witness.Pinned(dir) {
		return witness.Open(dir, "")
	}
	ring, err := k.ring()
	if err != nil {
		return nil, err
	}
	signed, err := first()
	if err != nil {
		return nil, fmt.Errorf("witness: first checkpoint: %w", err)
	}
	v, err := k.logVerifier(ring, signed)
	if err != nil {
		return nil, err
	}
	vkey, err := note.NewEd25519VerifierKey(v.Name(), ring[k.kernelKey])
	if err != nil {
		return nil, err
	}
	return witness.Open(dir, vkey)
}
