// Command ambit-mcp is the per-agent MCP gateway: an MCP server over
// stdio or streamable HTTP that lists exactly the task's granted tools and
// carries each call through the kernel, the agent's adapters and the
// verifier. See package gateway.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ambitkernel/ambit/adapters/gateway"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return gateway.Run(ctx, args, os.Stdin, os.Stdout)
}
