// Command ambitctl runs Ambit's offline suites and evaluations, creates dev
// certificates, and acts on a running kernel's governance API.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ambitkernel/ambit/kernel/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs ambitctl and returns its exit code: 0 on success (--help and
// --version included), 2 for a command line that could not be
// understood, 1 for anything else.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := cli.Main(ctx, &cli.Env{Stdout: stdout, Stderr: stderr}, args)
	if err == nil {
		return 0
	}
	// A failed check has already said what failed.
	if !errors.Is(err, cli.ErrFailed) {
		fmt.Fprintln(stderr, "ambitctl:", err)
	}
	if errors.Is(err, cli.ErrUsage) {
		return 2
	}
	return 1
}
