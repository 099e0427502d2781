// Command refund-data makes the expense-refund example's databases in a
// data folder: claims.db, seeded with the demo claims and receipts, and
// an empty payments.db (see package refunddata). Running it again
// changes nothing that exists.
//
//	refund-data --dir DATA
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ambitkernel/ambit/examples/expense-refund/refunddata"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "refund-data:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("refund-data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the data folder to make claims.db and payments.db in (created if missing)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *dir == "":
		return errors.New("--dir is required")
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	return refunddata.Create(ctx, *dir)
}
