package service

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ambitkernel/ambit/sdk/config"
)

// Defaults the ApplyDefaults methods give unset keys.
const (
	DefaultListen         = "127.0.0.1:0"
	DefaultKernelTimeout  = 3 * time.Second
	DefaultShutdownGrace  = 10 * time.Second
	DefaultHealthInterval = 5 * time.Second
	// DefaultGCHeadroomMB is how far the heap may grow between garbage
	// collections, at least ([Common].GCHeadroomMB).
	DefaultGCHeadroomMB = 64
)

// maxGCHeadroomMB bounds gc_headroom_mb at 64 GB: a larger value is a
// typo, not a plan.
const maxGCHeadroomMB = 64 << 10

// Tracing exporters ([Common].Tracing).
const (
	TracingOff    = "off"
	TracingStdout = "stdout"
	TracingFile   = "file"
)

// Common holds the configuration keys every Ambit process has, the kernel
// and the sidecars alike. A process's configuration embeds it inline
// (through [Config] for a sidecar), so these keys sit beside its own in
// one strict YAML file. Relative paths are relative to the working
// directory.
type Common struct {
	// Identity is this process's name in its PKI folder: its TLS
	// certificate, its receipt-signing key and the key id of its receipts.
	Identity string `json:"identity"`
	// PKIDir is the process's own folder of the PKI (pki.IdentityDir):
	// its certificate and keys, the CA certificate and its peers' public
	// keys.
	PKIDir string `json:"pki_dir"`
	// AddrFile, when set, receives the bound addresses as JSON, by
	// listener name (also "metrics" and "health" when those are on).
	AddrFile string `json:"addr_file"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// ShutdownGrace bounds the drain of in-flight calls on shutdown.
	ShutdownGrace config.Duration `json:"shutdown_grace"`
	// Reflection registers gRPC server reflection.
	Reflection bool `json:"reflection"`
	// Metrics, when set, is the host:port of a plain HTTP listener serving
	// Prometheus metrics at /metrics.
	Metrics string `json:"metrics"`
	// Profiling also serves Go's runtime profiles at /debug/pprof/ on the
	// metrics listener, to see where a live process spends its time.
	Profiling bool `json:"profiling"`
	// HealthListen, when set, is the host:port of a plaintext gRPC
	// listener serving only the health service, for orchestrators that
	// probe without a client certificate.
	HealthListen string `json:"health_listen"`
	// HealthInterval is how often the process probes its dependencies.
	HealthInterval config.Duration `json:"health_interval"`
	// Tracing is off (the default), stdout or file: where OpenTelemetry
	// spans are written, one JSON object per span.
	Tracing string `json:"tracing"`
	// TracingFile is the file spans are appended to when tracing is file.
	TracingFile string `json:"tracing_file"`
	// GCHeadroomMB bounds how many megabytes the heap may grow past what
	// the last garbage collection left live before the next: a process
	// that allocates fast and keeps little may grow by what it allocates
	// in half a second, up to this, and so collects about twice a second
	// rather than many times (package gcpace). A process that allocates
	// slowly, or keeps more, is paced as Go paces it. A GOGC variable in
	// the environment turns this off: Go's own setting wins.
	GCHeadroomMB int `json:"gc_headroom_mb"`
}

// ApplyDefaults fills unset keys with their defaults; identity is the
// process's default identity.
func (c *Common) ApplyDefaults(identity string) {
	if c.Identity == "" {
		c.Identity = identity
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = config.Duration(DefaultShutdownGrace)
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = config.Duration(DefaultHealthInterval)
	}
	if c.Tracing == "" {
		c.Tracing = TracingOff
	}
	if c.GCHeadroomMB == 0 {
		c.GCHeadroomMB = DefaultGCHeadroomMB
	}
}

// Validate reports every problem of the shared keys at once.
func (c *Common) Validate() error {
	var errs []error
	if c.PKIDir == "" {
		errs = append(errs, errors.New("pki_dir is required"))
	}
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level %q: want debug, info, warn or error", c.LogLevel))
	}
	switch c.Tracing {
	case "", TracingOff, TracingStdout:
		if c.TracingFile != "" {
			errs = append(errs, errors.New("tracing_file is set but tracing is not file"))
		}
	case TracingFile:
		if c.TracingFile == "" {
			errs = append(errs, errors.New("tracing_file is required when tracing is file"))
		}
	default:
		errs = append(errs, fmt.Errorf("tracing %q: want off, stdout or file", c.Tracing))
	}
	if c.GCHeadroomMB < 0 || c.GCHeadroomMB > maxGCHeadroomMB {
		errs = append(errs, fmt.Errorf("gc_headroom_mb %d: want 1 to %d megabytes (set GOGC in the environment for Go's own pacing)", c.GCHeadroomMB, maxGCHeadroomMB))
	}
	return errors.Join(errs...)
}

// Base returns c; through embedding it gives [Main] the shared keys of a
// process's whole configuration.
func (c *Common) Base() *Common { return c }

// Config holds the keys of a sidecar: a process with one listener that
// calls the kernel's adapter listener (the evidence adapter, the action
// adapter, the verifier). A sidecar's configuration embeds it inline:
//
//	type Config struct {
//		service.Config `json:",inline"`
//		Database string `json:"database"`
//	}
type Config struct {
	Common `json:",inline"`
	// Listen is the host:port of the sidecar's one listener.
	Listen string `json:"listen"`
	// Kernel is the host:port of the kernel's adapter listener.
	Kernel string `json:"kernel"`
	// KernelServerName is the name the kernel's certificate must be valid
	// for; empty: the host of Kernel.
	KernelServerName string `json:"kernel_server_name"`
	// KernelTimeout bounds each call to the kernel.
	KernelTimeout config.Duration `json:"kernel_timeout"`
}

// ApplyDefaults fills unset keys with their defaults; identity is the
// sidecar's default identity.
func (c *Config) ApplyDefaults(identity string) {
	c.Common.ApplyDefaults(identity)
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.KernelTimeout <= 0 {
		c.KernelTimeout = config.Duration(DefaultKernelTimeout)
	}
}

// Validate reports every problem of the shared keys at once.
func (c *Config) Validate() error {
	errs := []error{c.Common.Validate()}
	if c.Kernel == "" {
		errs = append(errs, errors.New("kernel is required"))
	}
	return errors.Join(errs...)
}

// Sidecar returns c; through embedding it gives [MainSidecar] the keys of
// a sidecar's whole configuration.
func (c *Config) Sidecar() *Config { return c }

// SetListen overrides the listen address (the --listen flag).
func (c *Config) SetListen(addr string) { c.Listen = addr }

// File is a process's whole configuration: it embeds [Common] (which
// provides Base) and has its own defaults and checks, which call
// [Common.ApplyDefaults] and [Common.Validate].
type File interface {
	config.Checked
	Base() *Common
}

// SidecarFile is a sidecar's whole configuration, embedding [Config].
type SidecarFile interface {
	File
	Sidecar() *Config
}

// listenSetter is a configuration with one listener, which --listen sets.
type listenSetter interface{ SetListen(addr string) }

// Flags are the command-line flags of every Ambit process binary.
type Flags struct {
	// Config is the YAML configuration file (required).
	Config string
	// Listen, when set, overrides the configuration's listen address
	// (only for a process with one listener).
	Listen string
	// AddrFile, when set, overrides the configuration's addr_file.
	AddrFile string
	// Version asks for the version line instead of running.
	Version bool
}

// ParseFlags parses args (without the program name); --listen exists only
// when oneListener is set. Usage goes to out. --help returns flag.ErrHelp,
// which callers treat as success.
func ParseFlags(name string, args []string, out io.Writer, oneListener bool) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: %s --config FILE [flags]\n\nEvery configuration key can also be set by an environment variable:\n%s<KEY> (AMBIT_LOG_LEVEL, AMBIT_LISTEN_AGENT, …).\n\n", name, config.EnvPrefix)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.Config, "config", "", "YAML configuration `file` (required)")
	if oneListener {
		fs.StringVar(&f.Listen, "listen", "", "listen `host:port`, overriding the configuration")
	}
	fs.StringVar(&f.AddrFile, "addr-file", "", "`file` to write the bound addresses to (JSON), overriding the configuration")
	fs.BoolVar(&f.Version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return Flags{}, err
	}
	if fs.NArg() > 0 {
		return Flags{}, fmt.Errorf("%s: unexpected arguments %q", name, fs.Args())
	}
	if f.Config == "" && !f.Version {
		return Flags{}, fmt.Errorf("%s: --config is required", name)
	}
	return f, nil
}

// Override applies the flags that are set to cfg.
func (f Flags) Override(cfg File) {
	if f.Listen != "" {
		if l, ok := cfg.(listenSetter); ok {
			l.SetListen(f.Listen)
		}
	}
	if f.AddrFile != "" {
		cfg.Base().AddrFile = f.AddrFile
	}
}

// Load reads the file flags name into cfg with [config.LoadChecked] (env
// overrides keys; nil: none) and applies the flag overrides.
func Load(flags Flags, env config.Env, cfg File) error {
	if err := config.LoadChecked(flags.Config, env, cfg); err != nil {
		return err
	}
	flags.Override(cfg)
	return nil
}
