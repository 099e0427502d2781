// Command ambit-demo tells the stories of the two example domains, the
// expense refund and the support desk, end to end: the four processes and
// the desk's server on loopback, SQLite files in a temporary folder, a
// scripted agent using sdk/client (see package demo).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ambitkernel/ambit/examples/demo"
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
