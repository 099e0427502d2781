// Command ambit-demo runs the expense-refund story end to end: four real
// processes on loopback, SQLite files in a temporary folder, a scripted
// agent using the generated Go clients.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ambitkernel/ambit/e2e/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := demo.Main(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ambit-demo:", err)
		os.Exit(1)
	}
}
