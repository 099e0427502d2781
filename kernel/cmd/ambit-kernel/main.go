// Command ambit-kernel is Ambit's policy kernel: the only process that
// grants authority. It serves the agent, adapter and governance APIs on
// separate mutually authenticated listeners.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ambitkernel/ambit/kernel/server"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, server.Name+":", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return server.Run(ctx, args, os.Stdout)
}
