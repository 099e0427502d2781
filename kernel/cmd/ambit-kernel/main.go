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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := server.Run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ambit-kernel:", err)
		os.Exit(1)
	}
}
