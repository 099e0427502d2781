package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/ambitkernel/ambit/sdk/serve"
)

// ListenerName is the name of the one listener of an adapter; it is also
// the key of its address in the address file.
const ListenerName = "grpc"

// Flags are the command-line flags of every adapter binary.
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

// Serve runs srv on listen until ctx ends, then drains it within grace.
// Once the address is bound it is written to addrFile (when not empty) under
// [ListenerName]; if that fails the server is stopped and the error
// returned, because whoever waits for the file would wait forever.
func Serve(ctx context.Context, log *zap.Logger, srv *serve.Server, listen, addrFile string, grace time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var addrErr error
	ready := func(addrs map[string]string) {
		if addrFile == "" {
			return
		}
		// ready runs on Run's goroutine before serving starts, so addrErr
		// is not shared with another goroutine.
		if err := serve.WriteAddrFile(addrFile, addrs); err != nil {
			addrErr = err
			cancel()
		}
	}
	err := serve.Run(ctx, log, grace, ready, serve.Listener{Name: ListenerName, Addr: listen, Server: srv})
	return errors.Join(addrErr, err)
}

// RandomID returns 16 random bytes in hex, the random part of every
// identifier the adapters issue.
func RandomID() string {
	b := make([]byte, 16)
	// crypto/rand.Read never fails on supported platforms (it panics
	// instead of returning a short read).
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
