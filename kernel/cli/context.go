package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// ContextFile is ambitctl's file of stored contexts,
// $XDG_CONFIG_HOME/ambit/contexts.yaml (or ~/.config/ambit/contexts.yaml):
// which kernel the governance commands talk to and as whom. ambitctl
// context set, use and list write and read it; it is written with mode
// 0600.
type ContextFile struct {
	// Current names the context the governance commands use when --context
	// is not given; empty: none, and the flags' defaults apply.
	Current string `json:"current,omitempty"`
	// Contexts maps a context's name to where its kernel is and who acts.
	Contexts map[string]Context `json:"contexts"`
}

// Context is one stored context. A flag given on the command line
// overrides its key.
type Context struct {
	// Kernel is the host:port of the kernel's governance listener (--kernel).
	Kernel string `json:"kernel"`
	// KernelName is the name the kernel's certificate must be valid for
	// (--kernel-name); empty: the host of Kernel. It is not used when
	// --kernel is given.
	KernelName string `json:"kernel_name,omitempty"`
	// PKI is the identity's key folder, or the dev PKI holding it as
	// <as>/ (--pki); an absolute path.
	PKI string `json:"pki"`
	// As is the governance identity to act as (--as).
	As string `json:"as"`
}

// contextName is the shape of a context's name.
var contextName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// contextPath is where the context file is: under $XDG_CONFIG_HOME when it
// is an absolute path (the XDG base directory rule), else under
// $HOME/.config.
func contextPath() (string, error) {
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "ambit", "contexts.yaml"), nil
	}
	home := os.Getenv("HOME")
	if home == "" {
		return "", errors.New("contexts: neither XDG_CONFIG_HOME nor HOME is set")
	}
	return filepath.Join(home, ".config", "ambit", "contexts.yaml"), nil
}

// loadContexts reads the context file strictly; a missing file has no
// contexts.
func loadContexts() (*ContextFile, string, error) {
	path, err := contextPath()
	if err != nil {
		return nil, "", err
	}
	f := &ContextFile{}
	if err := config.Load(path, f); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &ContextFile{Contexts: map[string]Context{}}, path, nil
		}
		return nil, "", err
	}
	if f.Contexts == nil {
		f.Contexts = map[string]Context{}
	}
	if _, ok := f.Contexts[f.Current]; f.Current != "" && !ok {
		return nil, "", fmt.Errorf("contexts %s: the current context %q is not among the contexts", path, f.Current)
	}
	return f, path, nil
}

// save writes the file with mode 0600 through a temporary file, so that a
// reader never sees half of it.
func (f *ContextFile) save(path string) error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return fmt.Errorf("contexts %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("contexts %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".contexts-*.yaml")
	if err != nil {
		return fmt.Errorf("contexts %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("contexts %s: %w", path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("contexts %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("contexts %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("contexts %s: %w", path, err)
	}
	return nil
}

func (f *ContextFile) names() []string {
	names := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func contextCmd(env *Env) *cobra.Command {
	return group(env, "context", "stored contexts: which kernel the governance commands talk to, and as whom",
		contextSetCmd(env), contextUseCmd(env), contextListCmd(env))
}

func contextSetCmd(env *Env) *cobra.Command {
	cmd := leaf("set NAME --kernel ADDR --pki DIR --as IDENTITY [--kernel-name N]",
		"store a context: a kernel's governance listener and the identity to act as (the first one stored is used)")
	var c Context
	fs := cmd.Flags()
	fs.StringVar(&c.Kernel, "kernel", "", "the kernel's governance listener, host:port")
	fs.StringVar(&c.KernelName, "kernel-name", "", "name the kernel's certificate must be valid for (default: the host of --kernel)")
	fs.StringVar(&c.PKI, "pki", "", "the identity's key folder, or the dev PKI holding it as <as>/ (stored as an absolute path)")
	fs.StringVar(&c.As, "as", "", "identity to act as (a governance certificate)")
	_ = cmd.MarkFlagDirname("pki")
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runContextSet(env, cmd, c, args) }
	return cmd
}

// runContextSet stores a new context, or changes the keys given of an
// existing one.
func runContextSet(env *Env, cmd *cobra.Command, c Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: context set NAME --kernel ADDR --pki DIR --as IDENTITY [--kernel-name N]", ErrUsage)
	}
	name := args[0]
	if !contextName.MatchString(name) {
		return fmt.Errorf("%w: a context name has 1 to 64 letters, digits, '_', '.' or '-' and starts with a letter or digit, got %q", ErrUsage, name)
	}
	f, path, err := loadContexts()
	if err != nil {
		return err
	}
	next, exists := f.Contexts[name]
	set := func(flag string, dst *string, v string) {
		if cmd.Flags().Changed(flag) {
			*dst = v
		}
	}
	set("kernel", &next.Kernel, c.Kernel)
	set("kernel-name", &next.KernelName, c.KernelName)
	set("pki", &next.PKI, c.PKI)
	set("as", &next.As, c.As)
	if next.Kernel == "" || next.PKI == "" || next.As == "" {
		return fmt.Errorf("%w: context %q needs --kernel, --pki and --as", ErrUsage, name)
	}
	if next.PKI, err = filepath.Abs(next.PKI); err != nil {
		return fmt.Errorf("context set: --pki: %w", err)
	}
	f.Contexts[name] = next
	current := ""
	if f.Current == "" {
		f.Current, current = name, "; it is in use"
	}
	if err := f.save(path); err != nil {
		return err
	}
	verb := "stored"
	if exists {
		verb = "changed"
	}
	_, err = fmt.Fprintf(env.Stdout, "context %s %s in %s%s\n", name, verb, path, current)
	return err
}

func contextUseCmd(env *Env) *cobra.Command {
	cmd := leaf("use NAME", "make a stored context the one the governance commands use")
	cmd.ValidArgsFunction = contextNames
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%w: context use NAME", ErrUsage)
		}
		f, path, err := loadContexts()
		if err != nil {
			return err
		}
		c, ok := f.Contexts[args[0]]
		if !ok {
			return fmt.Errorf("%w: no context %q in %s (ambitctl context list)", ErrUsage, args[0], path)
		}
		f.Current = args[0]
		if err := f.save(path); err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.Stdout, "using context %s: kernel %s as %s\n", args[0], c.Kernel, c.As)
		return err
	}
	return cmd
}

func contextListCmd(env *Env) *cobra.Command {
	cmd := leaf("list", "list the stored contexts; * marks the one in use")
	format := cmd.Flags().String("format", "text", "output format: text or json")
	formats(cmd, "text", "json")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := checkFormat(*format); err != nil {
			return err
		}
		if len(args) > 0 {
			return fmt.Errorf("%w: context list takes no arguments, got %q", ErrUsage, args)
		}
		f, path, err := loadContexts()
		if err != nil {
			return err
		}
		if *format == "json" {
			return writeJSON(env.Stdout, f)
		}
		if len(f.Contexts) == 0 {
			_, err := fmt.Fprintf(env.Stdout, "no contexts in %s (ambitctl context set NAME --kernel ADDR --pki DIR --as IDENTITY)\n", path)
			return err
		}
		for _, name := range f.names() {
			c := f.Contexts[name]
			mark := " "
			if name == f.Current {
				mark = "*"
			}
			server := ""
			if c.KernelName != "" {
				server = " (certificate for " + c.KernelName + ")"
			}
			fmt.Fprintf(env.Stdout, "%s %-16s kernel %s%s as %s, keys in %s\n", mark, name, c.Kernel, server, c.As, c.PKI)
		}
		return nil
	}
	return cmd
}

// contextNames completes a context's name.
func contextNames(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	f, _, err := loadContexts()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return f.names(), cobra.ShellCompDirectiveNoFileComp
}

// withContext fills the governance flags not given on the command line
// from the context --context names, or else the current one.
func (g *govFlags) withContext() error {
	if g.resolved {
		return nil
	}
	g.resolved = true
	f, path, err := loadContexts()
	if err != nil {
		return err
	}
	name := g.context
	if name == "" {
		name = f.Current
	}
	if name == "" {
		return nil
	}
	c, ok := f.Contexts[name]
	if !ok {
		return fmt.Errorf("%w: no context %q in %s (ambitctl context list)", ErrUsage, name, path)
	}
	given := func(flag string) bool { return g.flags != nil && g.flags.Changed(flag) }
	if !given("kernel") {
		g.kernel = c.Kernel
		if !given("kernel-name") {
			g.kernelName = c.KernelName
		}
	}
	if !given("pki") {
		g.pkiDir = c.PKI
	}
	if !given("as") {
		g.as = c.As
	}
	return nil
}
