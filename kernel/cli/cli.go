package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ambitkernel/ambit/sdk/version"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// ErrUsage marks a command line that could not be understood.
var ErrUsage = errors.New("usage")

// ErrFailed marks a command that ran and found a failure (a FAIL line, a
// broken log); its output already says what.
var ErrFailed = errors.New("check failed")

type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// Env is what a command may touch.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
}

func commands() map[string]command {
	return map[string]command{
		"suite":         {"run the seed's episodes and the extended families over the shipped profiles", runSuite},
		"eval":          {"evaluate one proposal file under one contract file", runEval},
		"reach":         {"list a contract's routes, the component granting each, its failure families and Ω (several compare)", runReach},
		"minimize":      {"run the removal test of --contract over --episodes and print the minimal contract", runMinimize},
		"debt":          {"the contraction debt of widening OLD into NEW: routes added, families to re-run, review load", runDebt},
		"dev init":      {"create a local CA and a key folder per process in DIR (--agent NAME adds an agent)", runDevInit},
		"dev up":        {"run the four processes and the examples' servers on loopback from DIR until SIGTERM; writes DIR/stack.json", runDevUp},
		"approve":       {"approve a pending approval as a governance identity", runApprove},
		"reject":        {"reject a pending approval as a governance identity", runReject},
		"approvals":     {"list pending approvals", runApprovals},
		"ledger check":  {"run the authority-ledger fixtures (the shipped ones, or those in DIR)", runLedgerCheck},
		"ledger verify": {"verify the kernel's log (against checkpoints: --db --checkpoint) and name the first bad entry", runLedgerVerify},
		"ledger at":     {"list every canon item's class as it was at TIME (RFC 3339)", runLedgerAt},

		// The verifiable log, offline and with a witness.
		"receipt export": {"fetch a receipt from the kernel as a bundle that verifies offline", runReceiptExport},
		"receipt verify": {"verify a receipt bundle offline: signatures, checkpoint and inclusion proof", runReceiptVerify},
		"witness":        {"check that the kernel's latest checkpoint extends the last one this witness kept", runWitness},
	}
}

// Main runs ambitctl with args (without the program name).
func Main(ctx context.Context, env *Env, args []string) error {
	cmds := commands()
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		_, err := fmt.Fprintln(env.Stdout, version.String("ambitctl"))
		return err
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.Stdout, cmds)
		if len(args) == 0 {
			return ErrUsage
		}
		return nil
	}
	// Two-word commands ("dev init", "ledger check") are registered with a
	// space.
	if len(args) > 1 {
		if c, ok := cmds[args[0]+" "+args[1]]; ok {
			return c.run(ctx, env, args[2:])
		}
	}
	c, ok := cmds[args[0]]
	if !ok {
		usage(env.Stderr, cmds)
		return fmt.Errorf("%w: unknown command %q", ErrUsage, strings.Join(args[:min(2, len(args))], " "))
	}
	return c.run(ctx, env, args[1:])
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: ambitctl <command> [flags]   (ambitctl --version prints the version)")
	fmt.Fprintln(w)
	for _, n := range names {
		fmt.Fprintf(w, "  %-16s %s\n", n, cmds[n].summary)
	}
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(env *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("ambitctl "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// parse parses flags wherever they stand, so that "ledger at TIME --kernel
// ADDR" works as well as "ledger at --kernel ADDR TIME"; the positional
// arguments are left in fs.Args().
func parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

func checkFormat(format string) error {
	return checkFormatOf(format, "text", "json")
}

// checkFormatOf refuses a --format outside allowed.
func checkFormatOf(format string, allowed ...string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return fmt.Errorf("%w: --format must be %s or %s, got %q", ErrUsage,
		strings.Join(allowed[:len(allowed)-1], ", "), allowed[len(allowed)-1], format)
}

// protoJSON renders m as indented JSON with proto field names. protojson
// varies its spacing between builds on purpose; re-indenting makes the
// output stable, so golden files and scripts can rely on it.
func protoJSON(m proto.Message) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
