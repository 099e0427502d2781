// Command supportdesk-mcp is the supportdesk example's upstream system: a
// small support desk over SQLite, served as an MCP server over streamable
// HTTP on a loopback address or over stdio. See package desk.
//
//	supportdesk-mcp --db desk.db --addr 127.0.0.1:0 --addr-file desk.json
//	supportdesk-mcp --db desk.db --stdio
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ambitkernel/ambit/examples/supportdesk/desk"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "supportdesk-mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return desk.Run(ctx, args, os.Stderr)
}
