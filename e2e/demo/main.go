package demo

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ambitkernel/ambit/e2e/cluster"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/money"
	"github.com/ambitkernel/ambit/sdk/version"
	_ "modernc.org/sqlite" // read the payments ledger
)

// Main is the ambit-demo command: it starts the four processes on loopback
// with SQLite files in a temporary folder, tells the story, prints the
// payments ledger and stops everything. It returns an error unless every
// step happened as expected.
func Main(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("ambit-demo", flag.ContinueOnError)
	fs.SetOutput(out)
	bin := fs.String("bin", "bin", "folder holding the ambit binaries")
	keep := fs.Bool("keep", false, "keep the working folder (databases, configs, logs)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(out, version.String("ambit-demo"))
		return err
	}
	binDir, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ambit-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if *keep || err != nil {
			fmt.Fprintf(out, "\nworking folder kept: %s (logs in %s)\n", dir, filepath.Join(dir, "logs"))
			return
		}
		_ = os.RemoveAll(dir)
	}()
	start := time.Now()
	fmt.Fprintf(out, "starting kernel, evidence adapter, action adapter and verifier on loopback (SQLite in %s)\n", dir)
	c, err := cluster.Start(ctx, cluster.Options{BinDir: binDir, Dir: dir, Seed: Seed})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		} else {
			fmt.Fprintln(out, "all four processes stopped cleanly")
		}
	}()
	fmt.Fprintf(out, "kernel agent %s, adapter %s, governance %s; evidence %s; action %s; verifier %s\n\n",
		c.KernelAgent, c.KernelAdapter, c.KernelGovernance, c.EvidenceAddr, c.ActionAddr, c.VerifierAddr)
	k, err := Connect(ctx, c)
	if err != nil {
		return err
	}
	s := &Story{C: c, K: k, Ambitctl: filepath.Join(binDir, "ambitctl"), Out: out}
	storyErr := s.Run(ctx)
	if storyErr != nil {
		fmt.Fprintf(out, "\n%v\n", storyErr)
	}
	if err := s.printLedger(ctx); err != nil {
		return errors.Join(storyErr, err)
	}
	v, err := k.Governance.VerifyLog(ctx, &kernelv1.VerifyLogRequest{})
	if err != nil {
		return errors.Join(storyErr, err)
	}
	s.expect(v.GetOk(), "the kernel's tamper-evident log verifies: %d entries, head %.16s…", v.GetEntries(), v.GetHead())
	fmt.Fprintf(out, "\nstory took %s\n", time.Since(start).Round(time.Millisecond))
	if storyErr != nil || len(s.failures) > 0 {
		return fmt.Errorf("demo failed: %d expectations did not hold", len(s.failures))
	}
	fmt.Fprintln(out, "every step happened as expected")
	return nil
}

// printLedger prints the payments ledger through a read-only connection and
// checks it holds exactly the two refunds the story allowed.
func (s *Story) printLedger(ctx context.Context) error {
	db, err := sql.Open("sqlite", "file:"+s.C.PaymentsDB+"?mode=ro&_pragma=query_only(1)")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT payment_id, claim_id, payee_id, destination, currency, amount_minor, idempotency_key
		FROM payments ORDER BY executed_at`)
	if err != nil {
		return fmt.Errorf("read payments ledger: %w", err)
	}
	defer rows.Close()
	s.printf("\npayments ledger\n  %-30s %-8s %-12s %-10s %-10s %s\n", "payment", "claim", "payee", "to", "amount", "idempotency key")
	perClaim := map[string]int{}
	for rows.Next() {
		var id, claim, payee, dest, cur, key string
		var minor int64
		if err := rows.Scan(&id, &claim, &payee, &dest, &cur, &minor, &key); err != nil {
			return err
		}
		perClaim[claim]++
		s.printf("  %-30s %-8s %-12s %-10s %-10s %s\n", id, claim, payee, dest, money.Format(money.New(cur, minor)), key)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.expect(perClaim["C-1001"] == 1 && perClaim["C-1003"] == 1 && len(perClaim) == 2,
		"exactly one payment each for C-1001 and C-1003, none for C-1002 or C-1004")
	return nil
}
