package cli

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	"github.com/ambitkernel/ambit/kernel/store"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	_ "modernc.org/sqlite" // read a stopped kernel's log
)

func ledgerCheckCmd(env *Env) *cobra.Command {
	cmd := leaf("check [DIR]", "run the authority-ledger fixtures (the shipped ones, or those in DIR)")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return runLedgerCheck(env, args) }
	return cmd
}

func runLedgerCheck(env *Env, args []string) error {
	var fixtures []canon.Fixture
	var err error
	switch len(args) {
	case 0:
		fixtures, err = canon.ShippedFixtures()
	case 1:
		fixtures, err = canon.LoadFixtureDir(args[0])
	default:
		return fmt.Errorf("%w: ledger check [DIR]", ErrUsage)
	}
	if err != nil {
		return err
	}
	if len(fixtures) == 0 {
		return fmt.Errorf("ledger check: no fixtures found")
	}
	failed := 0
	for _, f := range fixtures {
		r := canon.Run(f)
		printFixture(env.Stdout, r)
		if !r.Pass {
			failed++
		}
	}
	fmt.Fprintf(env.Stdout, "%d fixtures, %d passed, %d failed\n", len(fixtures), len(fixtures)-failed, failed)
	if failed > 0 {
		return ErrFailed
	}
	return nil
}

func short(c fmt.Stringer) string { return strings.TrimPrefix(c.String(), "CANON_CLASS_") }

func printFixture(w io.Writer, r canon.FixtureResult) {
	verdict := map[bool]string{true: "PASS", false: "FAIL"}
	var items []string
	for _, it := range r.Items {
		if !it.At.IsZero() {
			continue
		}
		items = append(items, fmt.Sprintf("%s expected %s computed %s", it.ID, short(it.Expected), short(it.Computed)))
	}
	fmt.Fprintf(w, "%s  %s: %s\n", verdict[r.Pass], r.Name, strings.Join(items, "; "))
	if r.Pass {
		return
	}
	for _, it := range r.Items {
		if !it.Pass {
			at := "end"
			if !it.At.IsZero() {
				at = it.At.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "      item %s at %s: expected %s, computed %s (%s)\n", it.ID, at, short(it.Expected), short(it.Computed), strings.Join(it.Reasons, "; "))
		}
	}
	for _, s := range r.Steps {
		if !s.Pass {
			fmt.Fprintf(w, "      step %d (%s): expected refusal %q, got %q %s\n", s.Index, s.Kind, s.ExpectError, s.GotError, s.Err)
		}
	}
	for _, c := range r.Contracts {
		if !c.Pass {
			fmt.Fprintf(w, "      contract %s differs:\n%s\n", c.ID, c.Diff)
		}
	}
}

// ledgerVerifyOptions are ledger verify's flags.
type ledgerVerifyOptions struct {
	gov            govFlags
	keys           keyFlags
	db, checkpoint string
}

func ledgerVerifyCmd(env *Env) *cobra.Command {
	cmd := leaf("verify", "verify the kernel's log (against checkpoints: --db --checkpoint) and name the first bad entry")
	var o ledgerVerifyOptions
	fs := cmd.Flags()
	o.gov.register(fs)
	o.keys.register(fs, &o.gov.pkiDir)
	fs.StringVar(&o.db, "db", "", "verify this kernel database file directly (the kernel may be stopped) instead of asking --kernel")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "with --db: a checkpoint file, or a checkpoint directory whose every checkpoint narrows down a bad entry")
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runLedgerVerify(cmd.Context(), env, &o, args) }
	return cmd
}

func runLedgerVerify(ctx context.Context, env *Env, o *ledgerVerifyOptions, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: ledger verify takes no arguments, got %q", ErrUsage, args)
	}
	// The context names the key folder the checkpoints are checked with.
	if err := o.gov.withContext(); err != nil {
		return err
	}
	if o.db == "" {
		if o.checkpoint != "" {
			return fmt.Errorf("%w: --checkpoint needs --db (a running kernel checks its own checkpoints)", ErrUsage)
		}
		return verifyRemote(ctx, env, &o.gov)
	}
	var cps []checkpoint.Checkpoint
	if o.checkpoint != "" {
		var err error
		if cps, err = loadCheckpoints(o.checkpoint, &o.keys); err != nil {
			return err
		}
	}
	r, err := verifyDB(ctx, o.db, checkpoint.Heads(cps))
	if err != nil {
		return err
	}
	if !r.OK {
		printBad(env, r.FirstBad, r.LastBad, r.Problem)
		return ErrFailed
	}
	against := ""
	if len(cps) > 0 {
		largest := slices.MaxFunc(cps, func(a, b checkpoint.Checkpoint) int { return cmp.Compare(a.Head.Size, b.Head.Size) })
		against = fmt.Sprintf(", an append-only extension of %d checkpoint(s) up to size %d", len(cps), largest.Head.Size)
	}
	fmt.Fprintf(env.Stdout, "OK  %d entries, root %s%s\n", r.Entries, r.Head, against)
	return nil
}

func verifyRemote(ctx context.Context, env *Env, g *govFlags) error {
	var resp *kernelv1.VerifyLogResponse
	err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
		resp, err = c.VerifyLog(ctx, &kernelv1.VerifyLogRequest{})
		return err
	})
	if err != nil {
		return fmt.Errorf("verify log: %w", err)
	}
	if !resp.GetOk() {
		printBad(env, resp.GetFirstBadSeq(), resp.GetLastBadSeq(), resp.GetProblem())
		return ErrFailed
	}
	fmt.Fprintf(env.Stdout, "OK  %d entries, root %s\n", resp.GetEntries(), resp.GetHead())
	return nil
}

func printBad(env *Env, first, last int64, problem string) {
	if last > first {
		fmt.Fprintf(env.Stdout, "FAIL  entries %d..%d: %s\n", first, last, problem)
		return
	}
	fmt.Fprintf(env.Stdout, "FAIL  entry %d: %s\n", first, problem)
}

// loadCheckpoints reads and verifies the checkpoints at path (a file or a
// directory) with the kernel's public key.
func loadCheckpoints(path string, k *keyFlags) ([]checkpoint.Checkpoint, error) {
	first, err := firstNote(path)
	if err != nil {
		return nil, err
	}
	ring, err := k.ring()
	if err != nil {
		return nil, err
	}
	v, err := k.logVerifier(ring, first)
	if err != nil {
		return nil, err
	}
	return checkpoint.Load(path, v)
}

// verifyDB opens a kernel database read-only and streams its journal
// through journal.Verify.
func verifyDB(ctx context.Context, path string, trusted []journal.TreeHead) (journal.Report, error) {
	if sqldb.IsPostgres(path) {
		db, err := sqldb.OpenReadOnly(path)
		if err != nil {
			return journal.Report{}, err
		}
		defer db.Close()
		return journal.Verify(ctx, db, trusted)
	}
	if _, err := os.Stat(path); err != nil {
		return journal.Report{}, fmt.Errorf("open %s: %w", path, err)
	}
	// The log first: what it held is either still in it or, copied before
	// it was emptied, in the database by the time the database is read.
	logged, err := store.LoggedThrough(path)
	if err != nil {
		return journal.Report{}, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=query_only(1)")
	if err != nil {
		return journal.Report{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	if logged > 0 {
		head, err := journal.Head(ctx, db)
		if err != nil {
			return journal.Report{}, fmt.Errorf("%s: %w", path, err)
		}
		if head.Size < uint64(logged) {
			return journal.Report{}, fmt.Errorf("%s: its log file holds journal entries through %d and the database's journal ends at %d: entries the kernel acknowledged and has not copied into the database (it is running, or it stopped without a clean shutdown); let a running kernel copy them, or start the kernel on it once (it copies them and empties the log), then verify", path, logged, head.Size)
		}
	}
	return journal.Verify(ctx, db, trusted)
}

func ledgerAtCmd(env *Env) *cobra.Command {
	cmd := leaf("at [TIME]", "list every canon item's class as it was at TIME (RFC 3339)")
	var g govFlags
	g.register(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runLedgerAt(cmd.Context(), env, &g, args) }
	return cmd
}

func runLedgerAt(ctx context.Context, env *Env, g *govFlags, args []string) error {
	req := &kernelv1.ListItemsRequest{}
	switch len(args) {
	case 0:
	case 1:
		at, err := time.Parse(time.RFC3339Nano, args[0])
		if err != nil {
			return fmt.Errorf("%w: ledger at TIME: %w", ErrUsage, err)
		}
		req.At = timestamppb.New(at)
	default:
		return fmt.Errorf("%w: ledger at [TIME]", ErrUsage)
	}
	// Every item, a page at a time, each printed as it comes (a ledger of
	// a million items, contracts and all, would not fit in memory); the
	// head printed is the last page's.
	req.Limit = maxPage
	var head string
	err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) error {
		for {
			resp, err := c.ListItems(ctx, req)
			if err != nil {
				return err
			}
			for _, it := range resp.GetItems() {
				fmt.Fprintf(env.Stdout, "%-24s %-18s %-20s %s\n", it.GetItem().GetCanonItemId(), short(it.GetClass()),
					strings.TrimPrefix(it.GetItem().GetKind().String(), "ITEM_KIND_"), strings.Join(it.GetReasons(), "; "))
			}
			head = resp.GetLedgerHead()
			if req.AfterItemId = resp.GetNextAfterItemId(); req.AfterItemId == "" {
				return nil
			}
		}
	})
	if req.At != nil && status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("list items: %w (the kernel goes on replaying its journal to %s: run the command again in a while, or give a longer --timeout)", err, args[0])
	}
	if err != nil {
		return fmt.Errorf("list items: %w", err)
	}
	_, err = fmt.Fprintf(env.Stdout, "ledger head %s\n", head)
	return err
}
