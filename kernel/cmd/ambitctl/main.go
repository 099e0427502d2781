// Command ambitctl runs Ambit's offline suites and evaluations, creates dev
// certificates, and acts on a running kernel's governance API.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ambitkernel/ambit/kernel/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Main(ctx, &cli.Env{Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
	stop()
	if err != nil {
		if !errors.Is(err, cli.ErrFailed) {
			fmt.Fprintln(os.Stderr, "ambitctl:", err)
		}
		if errors.Is(err, cli.ErrUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
