package service

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
)

// Defaults [Config.ApplyDefaults] gives unset keys.
const (
	DefaultListen        = "127.0.0.1:0"
	DefaultKernelTimeout = 3 * time.Second
	DefaultShutdownGrace = 10 * time.Second
)

// Config holds the configuration keys every service has. A service's own
// configuration embeds it inline, so these keys sit beside its own in one
// strict YAML file:
//
//	type Config struct {
//		service.Config `json:",inline"`
//		Database string `json:"database"`
//	}
//
// Relative paths are relative to the working directory.
type Config struct {
	// Identity is this process's name in the PKI directory: its TLS
	// certificate, its receipt-signing key and the key id of its receipts.
	Identity string `json:"identity"`
	// PKIDir is the directory written by pki.DevInit.
	PKIDir string `json:"pki_dir"`
	// Listen is the host:port of the service's one listener.
	Listen string `json:"listen"`
	// AddrFile, when set, receives the bound address as {"grpc": "host:port"}.
	AddrFile string `json:"addr_file"`
	// Kernel is the host:port of the kernel's adapter listener.
	Kernel string `json:"kernel"`
	// KernelTimeout bounds each call to the kernel.
	KernelTimeout config.Duration `json:"kernel_timeout"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// ShutdownGrace bounds the drain of in-flight calls on shutdown.
	ShutdownGrace config.Duration `json:"shutdown_grace"`
	// Reflection registers gRPC server reflection.
	Reflection bool `json:"reflection"`
}

// ApplyDefaults fills unset keys with their defaults; identity is the
// service's default identity.
func (c *Config) ApplyDefaults(identity string) {
	if c.Identity == "" {
		c.Identity = identity
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.KernelTimeout <= 0 {
		c.KernelTimeout = config.Duration(DefaultKernelTimeout)
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = config.Duration(DefaultShutdownGrace)
	}
}

// Validate reports every problem of the shared keys at once.
func (c *Config) Validate() error {
	var errs []error
	if c.PKIDir == "" {
		errs = append(errs, errors.New("pki_dir is required"))
	}
	if c.Kernel == "" {
		errs = append(errs, errors.New("kernel is required"))
	}
	return errors.Join(errs...)
}

// Base returns c; through embedding it gives [Main] the shared keys of a
// service's whole configuration.
func (c *Config) Base() *Config { return c }

// File is a service's whole configuration: it embeds [Config] (which
// provides Base) and has its own defaults and checks, which call
// [Config.ApplyDefaults] and [Config.Validate].
type File interface {
	config.Checked
	Base() *Config
}

// Flags are the command-line flags of every service binary.
type Flags struct {
	// Config is the YAML configuration file (required).
	Config string
	// Listen, when set, overrides the configuration's listen address.
	Listen string
	// AddrFile, when set, overrides the configuration's addr_file.
	AddrFile string
}

// ParseFlags parses args (without the program name). Usage goes to out.
// --help returns flag.ErrHelp, which callers treat as success.
func ParseFlags(name string, args []string, out io.Writer) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.Config, "config", "", "YAML configuration `file` (required)")
	fs.StringVar(&f.Listen, "listen", "", "listen `host:port`, overriding the configuration")
	fs.StringVar(&f.AddrFile, "addr-file", "", "`file` to write the bound address to (JSON), overriding the configuration")
	if err := fs.Parse(args); err != nil {
		return Flags{}, err
	}
	if fs.NArg() > 0 {
		return Flags{}, fmt.Errorf("%s: unexpected arguments %q", name, fs.Args())
	}
	if f.Config == "" {
		return Flags{}, fmt.Errorf("%s: --config is required", name)
	}
	return f, nil
}

// Override applies the flags that are set to c.
func (f Flags) Override(c *Config) {
	if f.Listen != "" {
		c.Listen = f.Listen
	}
	if f.AddrFile != "" {
		c.AddrFile = f.AddrFile
	}
}

// Load parses args as [ParseFlags] does, reads the file they name into cfg
// with [config.LoadChecked] and applies the flag overrides.
func Load(name string, args []string, out io.Writer, cfg File) error {
	flags, err := ParseFlags(name, args, out)
	if err != nil {
		return err
	}
	if err := config.LoadChecked(flags.Config, cfg); err != nil {
		return err
	}
	flags.Override(cfg.Base())
	return nil
}
