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
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// ErrUsage marks a command line that could not be understood.
var ErrUsage = errors.New("usage")

// ErrFailed marks a command that ran and found a failure (a FAIL line, a
// broken log); its output already says what.
var ErrFailed = errors.New("check failed")

// Env is what a command may touch.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Main runs ambitctl with args (without the program name).
func Main(ctx context.Context, env *Env, args []string) error {
	root := newRoot(env)
	// A nil slice would make cobra read os.Args.
	root.SetArgs(longFlags(root, append([]string{}, args...)))
	_, err := root.ExecuteContextC(ctx)
	return err
}

// newRoot builds the command tree. Each command is built by a function of
// its own that declares its flags and names the function doing its work;
// a command is added by adding it here.
func newRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "ambitctl",
		Short:         "Ambit's offline suites and evaluations, dev certificates and governance of a running kernel",
		Version:       version.String("ambitctl"),
		SilenceErrors: true,
		SilenceUsage:  true,
		// The completion command is ours: it takes the shell as its one
		// argument and is listed with the others.
		CompletionOptions:          cobra.CompletionOptions{DisableDefaultCmd: true},
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand(env),
		RunE: func(cmd *cobra.Command, _ []string) error {
			usage(env.Stdout, cmd)
			return fmt.Errorf("%w: no command given", ErrUsage)
		},
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if !cmd.HasParent() {
			return fmt.Errorf("%w: %w (ambitctl --help lists the commands)", ErrUsage, err)
		}
		return fmt.Errorf("%w: %s: %w (ambitctl %s --help lists its flags)", ErrUsage, commandName(cmd), err, commandName(cmd))
	})
	commandHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root {
			usage(env.Stdout, root)
			return
		}
		commandHelp(cmd, args)
	})

	root.AddCommand(
		suiteCmd(env),
		evalCmd(env),
		reachCmd(env),
		minimizeCmd(env),
		debtCmd(env),
		group(env, "dev", "development helpers", devInitCmd(env),
			flagCommand(env, "up DIR", "run the four processes and the examples' servers on loopback from DIR until SIGTERM; writes DIR/stack.json", runDevUp)),
		approveCmd(env, true),
		approveCmd(env, false),
		approvalsCmd(env),
		group(env, "ledger", "authority-ledger checks", ledgerCheckCmd(env), ledgerVerifyCmd(env), ledgerAtCmd(env)),

		// Governance of a running kernel, in one command each, where a
		// stored context says which kernel and as whom.
		contractCmd(env),
		tasksCmd(env),
		commitmentsCmd(env),
		receiptsCmd(env),
		contextCmd(env),

		// The verifiable log, offline and with a witness.
		group(env, "receipt", "receipt bundles", receiptExportCmd(env), receiptVerifyCmd(env)),
		witnessCmd(env),

		&cobra.Command{
			Use:   "version",
			Short: "print the version",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				_, err := fmt.Fprintln(env.Stdout, version.String("ambitctl"))
				return err
			},
		},
		completionCmd(env, root),
	)
	return root
}

// group is a command that only holds others ("ledger check", "dev
// init"); on its own, or with an unknown word after it, it is a usage
// error.
func group(env *Env, name, short string, cmds ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use:                        name,
		Short:                      short,
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand(env),
		RunE: func(cmd *cobra.Command, _ []string) error {
			usage(env.Stderr, cmd)
			return fmt.Errorf("%w: %s needs a command", ErrUsage, name)
		},
	}
	g.AddCommand(cmds...)
	return g
}

// unknownCommand refuses arguments to a command that only holds others:
// the first is an unknown command.
func unknownCommand(env *Env) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		usage(env.Stderr, cmd)
		name := strings.TrimPrefix(commandName(cmd)+" "+args[0], "ambitctl ")
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			return fmt.Errorf("%w: unknown command %q (did you mean %q?)", ErrUsage, name, s[0])
		}
		return fmt.Errorf("%w: unknown command %q", ErrUsage, name)
	}
}

// commandName is a command's path without the program name ("ledger
// check"); the root's is "ambitctl".
func commandName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// usage lists every command under cmd, one line each.
func usage(w io.Writer, cmd *cobra.Command) {
	type line struct{ name, summary string }
	var lines []line
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			if sub.HasSubCommands() {
				walk(sub)
				continue
			}
			lines = append(lines, line{commandName(sub), sub.Short})
		}
	}
	walk(cmd)
	sort.Slice(lines, func(i, j int) bool { return lines[i].name < lines[j].name })
	if cmd.HasParent() {
		fmt.Fprintf(w, "usage: ambitctl %s <command> [flags]\n", commandName(cmd))
	} else {
		fmt.Fprintln(w, "usage: ambitctl <command> [flags]   (ambitctl --version prints the version)")
	}
	fmt.Fprintln(w)
	for _, l := range lines {
		fmt.Fprintf(w, "  %-16s %s\n", l.name, l.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ambitctl <command> --help describes a command and its flags.")
}

// longFlags rewrites "-name" and "-name=value" as "--name" and
// "--name=value" when name is a long flag of the command args select: the
// standard flag package, which ambitctl used before, accepted both.
func longFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil || cmd.DisableFlagParsing || (len(args) > 0 && strings.HasPrefix(args[0], "__complete")) {
		return args
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if len(name) > 1 && (cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil) {
			out[i] = "-" + a
		}
	}
	return out
}

// completionCmd prints the completion script of a shell; the scripts ask
// ambitctl itself what completes a word.
func completionCmd(env *Env, root *cobra.Command) *cobra.Command {
	shells := map[string]func(io.Writer) error{
		"bash":       func(w io.Writer) error { return root.GenBashCompletionV2(w, true) },
		"zsh":        root.GenZshCompletion,
		"fish":       func(w io.Writer) error { return root.GenFishCompletion(w, true) },
		"powershell": root.GenPowerShellCompletionWithDesc,
	}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "print the shell completion script (e.g. source <(ambitctl completion bash))",
		Long: "Print the completion script of a shell. For the current bash session:\n\n" +
			"  source <(ambitctl completion bash)\n\n" +
			"or save it as /etc/bash_completion.d/ambitctl; zsh: ambitctl completion zsh > \"${fpath[1]}/_ambitctl\";\n" +
			"fish: ambitctl completion fish > ~/.config/fish/completions/ambitctl.fish.",
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || shells[args[0]] == nil {
				return fmt.Errorf("%w: completion bash|zsh|fish|powershell", ErrUsage)
			}
			return shells[args[0]](env.Stdout)
		},
	}
}

// leaf starts a command that does work. use is its name and arguments as
// --help shows them ("reach CONTRACT..."); the arguments are checked by
// the command itself, so that the message says what is missing.
func leaf(use, short string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short}
}

// formats completes --format with the values a command accepts.
func formats(cmd *cobra.Command, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// flagCommand runs a command whose flags the standard flag package parses
// (with newFlags and parse, as ambitctl's commands did before cobra): it
// gets every argument after its name. --help prints its flags.
func flagCommand(env *Env, use, short string, run func(ctx context.Context, env *Env, args []string) error) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := run(cmd.Context(), env, args)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		},
	}
}

// newFlags returns a flag set that reports errors instead of exiting, for
// a [flagCommand].
func newFlags(env *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("ambitctl "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// parse parses flags wherever they stand, so that "ledger at TIME --kernel
// ADDR" works as well as "ledger at --kernel ADDR TIME"; the positional
// arguments are left in fs.Args(). --help prints the flags and returns
// flag.ErrHelp.
func parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
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
