package chaos

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Problems lists every figure that is not what it must be: a loop that
// did not finish, a death nothing explains, an effect lost, doubled,
// without its receipt or a receipt without its effect, an effect nobody
// intended, a commitment left open or failed, a receipt that does not
// verify, an effect the action adapter could not settle, a kernel start
// that did not verify the journal, a process never killed, and a ledger
// that does not verify (once [VerifyLedger] has run). Empty means the run
// found nothing wrong.
func (r *Report) Problems() []string {
	var out []string
	add := func(what string, items []string) {
		for _, it := range items {
			out = append(out, what+": "+it)
		}
	}
	for _, o := range r.Figures.Failed() {
		out = append(out, "loop failed: "+o.String())
	}
	add("unexpected death", r.Figures.Unexpected)
	for _, p := range r.Options.Processes {
		if k := r.Figures.Kills[p]; k.Random+k.Failpoint == 0 {
			out = append(out, "never killed: "+p)
		}
	}
	a := r.Audit
	add("lost effect", a.Lost)
	add("duplicate", a.Duplicates)
	add("effect without receipt", a.Unreceipted)
	add("receipt without effect", a.Phantoms)
	add("unintended effect", a.Unintended)
	add("open commitment", a.Open)
	add("receipt does not verify", a.BadReceipts)
	if n := a.Commitments["FAILED"]; n > 0 {
		out = append(out, fmt.Sprintf("failed commitments: %d readbacks found a mismatch", n))
	}
	if got, want := a.Payments+a.Credits, a.Intended; got != want {
		out = append(out, fmt.Sprintf("effects in the targets: %d, intended %d", got, want))
	}
	if a.EffectReceipts != a.Intended {
		out = append(out, fmt.Sprintf("effect receipts in the journal: %d, intended %d", a.EffectReceipts, a.Intended))
	}
	if a.StartedKeys > 0 {
		out = append(out, fmt.Sprintf("action adapter: %d keys still Started (effects in doubt)", a.StartedKeys))
	}
	if a.JournalVerified != a.KernelStarts {
		out = append(out, fmt.Sprintf("kernel: %d starts, %d verified the journal", a.KernelStarts, a.JournalVerified))
	}
	if l := r.Ledger; l != nil && !l.OK {
		out = append(out, "ledger verify failed: "+l.Output)
	}
	return out
}

// Write prints the report as a table.
func (r *Report) Write(w io.Writer) error {
	f, a, o := r.Figures, r.Audit, r.Options
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cells ...any) {
		for i, c := range cells {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	failed := len(f.Failed())
	row("chaos run", fmt.Sprintf("%d refund + %d support-desk loops, %d workers, seed %d, capabilities live %s; %s (audit included: %s)",
		o.RefundLoops, o.DeskLoops, o.Workers, o.Seed, o.CapabilityTTL, r.Elapsed.Round(time.Second), r.Total.Round(time.Second)))
	row("loops finished", fmt.Sprintf("%d of %d (read → propose → execute → readback VERIFIED)", len(f.Loops)-failed, len(f.Loops)))
	row("")
	header := []any{"SIGKILLs"}
	for _, p := range r.Options.Processes {
		header = append(header, p)
	}
	row(append(header, "total")...)
	var random, atPoint []any
	var tr, tf int
	for _, p := range r.Options.Processes {
		k := f.Kills[p]
		random, atPoint = append(random, k.Random), append(atPoint, k.Failpoint)
		tr, tf = tr+k.Random, tf+k.Failpoint
	}
	row(append(append([]any{"  at random times"}, random...), tr)...)
	row(append(append([]any{"  at failpoints"}, atPoint...), tf)...)
	row("restarts", fmt.Sprintf("%d (%s on average until SERVING)", f.Restarts, avg(f.RestartTime, f.Restarts)))
	row("unexpected deaths", len(f.Unexpected))
	row("")
	row("agent retries", strings.Join(Steps, "  "), "total")
	var cells []string
	total := 0
	for _, s := range Steps {
		cells = append(cells, fmt.Sprintf("%*d", len(s), f.Retries[s]))
		total += f.Retries[s]
	}
	row("", strings.Join(cells, "  "), total)
	row("capabilities re-proposed", f.Reproposals)
	row("")
	row("failpoint", "armed", "fired", "not reached")
	for _, p := range r.Options.Processes {
		for _, name := range failpointsOf(p) {
			c := f.Failpoints[name]
			if c == nil {
				c = &FailpointCount{}
			}
			row("  "+p+" "+name, c.Armed, c.Fired, c.NotReached)
		}
	}
	row("")
	row("effects intended", a.Intended)
	row("effects in the targets", fmt.Sprintf("%d (payments %d, desk credits %d)", a.Payments+a.Credits, a.Payments, a.Credits))
	row("effect receipts journaled", a.EffectReceipts)
	row("lost effects", len(a.Lost))
	row("duplicates", len(a.Duplicates))
	row("effects without a receipt", len(a.Unreceipted))
	row("receipts without an effect", len(a.Phantoms))
	row("unintended effects", len(a.Unintended))
	row("open commitments", fmt.Sprintf("%d (%s)", len(a.Open), counts(a.Commitments)))
	row("action keys", fmt.Sprintf("%d still started, %d done but not yet marked recorded", a.StartedKeys, a.UnrecordedKeys))
	row("effects resumed", fmt.Sprintf("%d first attempts at a key whose capability an earlier attempt had redeemed", a.Resumed))
	row("proposals answered again", fmt.Sprintf("%d (same request id after a lost answer)", a.RepeatedProposals))
	row("journal", fmt.Sprintf("%d entries; receipts %s; %d do not verify", a.Entries, counts(a.Receipts), len(a.BadReceipts)))
	row("kernel starts", fmt.Sprintf("%d, each verified the journal against its checkpoints: %d", a.KernelStarts, a.JournalVerified))
	if l := r.Ledger; l != nil {
		first, _, _ := strings.Cut(l.Output, "\n")
		row("ledger verify", fmt.Sprintf("%s (%d checkpoints in the directory)", first, l.Checkpoints))
	}
	return tw.Flush()
}

func avg(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return (d / time.Duration(n)).Round(time.Millisecond)
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", strings.ToLower(k), m[k]))
	}
	return strings.Join(parts, ", ")
}
