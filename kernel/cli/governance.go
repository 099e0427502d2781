package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/contract"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/money"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// template is the placeholder a contract template leaves in its binding
// (examples/README.md): the task and the record are filled per task.
const template = "TEMPLATE"

func contractCmd(env *Env) *cobra.Command {
	return group(env, "contract", "contracts in the authority ledger: propose, promote, bind",
		contractProposeCmd(env), contractPromoteCmd(env), contractBindCmd(env))
}

// proposeOptions are contract propose's flags.
type proposeOptions struct {
	gov                                    govFlags
	id, task, recordKey, provenance, scope string
	validFor                               time.Duration
	format                                 string
}

func contractProposeCmd(env *Env) *cobra.Command {
	cmd := leaf("propose FILE --id ID [--task T --record-key K --valid-for 4h --provenance REF]",
		"propose a contract file to the ledger as item ID, filling a template's binding")
	var o proposeOptions
	fs := cmd.Flags()
	o.gov.register(fs)
	fs.StringVar(&o.id, "id", "", "the canon item's identifier (required), e.g. CTR-refund-1001")
	fs.StringVar(&o.task, "task", "", "binding.task_id: the task the contract is for (required when the file's is TEMPLATE)")
	fs.StringVar(&o.recordKey, "record-key", "", "binding.record.key: the bound record (required when the file's is TEMPLATE)")
	fs.DurationVar(&o.validFor, "valid-for", 0, "binding.valid_until: this long from now (default: the file's)")
	fs.StringVar(&o.provenance, "provenance", "", "the item's provenance_ref, e.g. policy-repo:refund@v3 (default: file:FILE's base name)")
	fs.StringVar(&o.scope, "scope", "SCOPE_TASK", "the item's scope: whose promotion authority it needs")
	fs.StringVar(&o.format, "format", "text", "output format: text or json")
	formats(cmd, "text", "json")
	_ = cmd.RegisterFlagCompletionFunc("scope", scopeNames)
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runContractPropose(cmd.Context(), env, &o, args) }
	return cmd
}

func runContractPropose(ctx context.Context, env *Env, o *proposeOptions, args []string) error {
	if err := checkFormat(o.format); err != nil {
		return err
	}
	if len(args) != 1 || o.id == "" {
		return fmt.Errorf("%w: contract propose FILE --id ID [--task T --record-key K --valid-for 4h --provenance REF]", ErrUsage)
	}
	scope, ok := ledgerv1.Scope_value[o.scope]
	if !ok || scope == 0 {
		return fmt.Errorf("%w: --scope %q is not a scope", ErrUsage, o.scope)
	}
	if o.validFor < 0 {
		return fmt.Errorf("%w: --valid-for must not be negative, got %s", ErrUsage, o.validFor)
	}
	c, err := contract.Load(args[0])
	if err != nil {
		return err
	}
	if err := bindTemplate(c, args[0], o, time.Now()); err != nil {
		return err
	}
	provenance := o.provenance
	if provenance == "" {
		provenance = "file:" + filepath.Base(args[0])
	}
	item := &ledgerv1.CanonItem{
		CanonItemId:    o.id,
		Kind:           ledgerv1.ItemKind_ITEM_KIND_CONTRACT,
		Contract:       c,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef:  provenance,
		Scope:          ledgerv1.Scope(scope),
		Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
		PromotionState: ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED,
		ConflictState:  ledgerv1.ConflictState_CONFLICT_STATE_NONE,
	}
	var resp *kernelv1.ProposeItemResponse
	err = o.gov.call(ctx, func(ctx context.Context, g kernelv1.GovernanceServiceClient) (err error) {
		resp, err = g.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: item})
		return err
	})
	if err != nil {
		return fmt.Errorf("propose %s: %w", o.id, err)
	}
	if o.format == "json" {
		return writeProto(env.Stdout, resp)
	}
	it := resp.GetItem()
	b := it.GetItem().GetContract().GetBinding()
	_, err = fmt.Fprintf(env.Stdout, "proposed %s: contract %s v%s for task %s, valid until %s; %s\n", o.id,
		c.GetContractId(), c.GetVersion(), b.GetTaskId(), b.GetValidUntil().AsTime().UTC().Format(time.RFC3339), classLine(it))
	return err
}

// bindTemplate fills the binding the flags give, and refuses a binding
// still holding a template's placeholder.
func bindTemplate(c *contractv1.Contract, file string, o *proposeOptions, now time.Time) error {
	if c.Binding == nil {
		c.Binding = &contractv1.Binding{}
	}
	b := c.Binding
	if o.task != "" {
		b.TaskId = o.task
	}
	if o.recordKey != "" {
		if b.GetRecord().GetSource() == "" {
			return fmt.Errorf("%w: %s binds no record (binding.record.source): --record-key has nothing to fill", ErrUsage, file)
		}
		b.Record.Key = o.recordKey
	}
	if o.validFor > 0 {
		b.ValidUntil = timestamppb.New(now.Add(o.validFor).UTC().Truncate(time.Second))
	}
	var missing []string
	if b.GetTaskId() == template || b.GetTaskId() == "" {
		missing = append(missing, "--task")
	}
	if b.GetRecord().GetKey() == template {
		missing = append(missing, "--record-key")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s is a template: give %s", ErrUsage, file, strings.Join(missing, " and "))
	}
	return nil
}

func contractPromoteCmd(env *Env) *cobra.Command {
	cmd := leaf("promote ID", "promote a proposed ledger item as the --as identity (it needs the scope's promotion authority)")
	var g govFlags
	g.register(cmd.Flags())
	format := cmd.Flags().String("format", "text", "output format: text or json")
	formats(cmd, "text", "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkFormat(*format); err != nil {
			return err
		}
		if len(args) != 1 {
			return fmt.Errorf("%w: contract promote ID", ErrUsage)
		}
		var resp *kernelv1.PromoteItemResponse
		err := g.call(cmd.Context(), func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
			resp, err = c.PromoteItem(ctx, &kernelv1.PromoteItemRequest{CanonItemId: args[0]})
			return err
		})
		if err != nil {
			return fmt.Errorf("promote %s: %w", args[0], err)
		}
		if *format == "json" {
			return writeProto(env.Stdout, resp)
		}
		_, err = fmt.Fprintf(env.Stdout, "promoted %s by %s: %s\n", args[0], resp.GetItem().GetItem().GetPromotionAuthority(), classLine(resp.GetItem()))
		return err
	}
	return cmd
}

func contractBindCmd(env *Env) *cobra.Command {
	cmd := leaf("bind ID --task T --agent A", "bind a task to contract item ID and the one agent that acts on it")
	var g govFlags
	g.register(cmd.Flags())
	task := cmd.Flags().String("task", "", "the task (required); the contract's binding must name it")
	agent := cmd.Flags().String("agent", "", "the agent's certificate name (required)")
	format := cmd.Flags().String("format", "text", "output format: text or json")
	formats(cmd, "text", "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkFormat(*format); err != nil {
			return err
		}
		if len(args) != 1 || *task == "" || *agent == "" {
			return fmt.Errorf("%w: contract bind ID --task T --agent A", ErrUsage)
		}
		var resp *kernelv1.BindTaskResponse
		err := g.call(cmd.Context(), func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
			resp, err = c.BindTask(ctx, &kernelv1.BindTaskRequest{TaskId: *task, ContractItemId: args[0], Agent: *agent})
			return err
		})
		if err != nil {
			return fmt.Errorf("bind %s to %s: %w", *task, args[0], err)
		}
		if *format == "json" {
			return writeProto(env.Stdout, resp)
		}
		note := ""
		if resp.GetItem().GetClass() != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
			note = " (only a CANONICAL contract yields ALLOW: promote it)"
		}
		_, err = fmt.Fprintf(env.Stdout, "task %s bound to %s for agent %s; the contract is %s%s\n", *task, args[0], *agent, classLine(resp.GetItem()), note)
		return err
	}
	return cmd
}

func tasksCmd(env *Env) *cobra.Command {
	cmd := leaf("tasks", "list the tasks bound to contracts: contract item, its class now, agent, expiry")
	var g govFlags
	g.register(cmd.Flags())
	agent := cmd.Flags().String("agent", "", "only the tasks of this agent")
	item := cmd.Flags().String("contract", "", "only the tasks bound to this contract item")
	var page pageFlags
	page.register(cmd, "task")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := page.check("tasks", args); err != nil {
			return err
		}
		var resp *kernelv1.ListTasksResponse
		err := g.call(cmd.Context(), func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
			resp, err = c.ListTasks(ctx, &kernelv1.ListTasksRequest{Agent: *agent, ContractItemId: *item, AfterTaskId: page.after, Limit: page.limit})
			return err
		})
		if err != nil {
			return fmt.Errorf("list tasks: %w", err)
		}
		if page.format == "json" {
			return writeProto(env.Stdout, resp)
		}
		if len(resp.GetTasks()) == 0 {
			_, err := fmt.Fprintln(env.Stdout, "no tasks")
			return err
		}
		tw := table(env.Stdout, "TASK", "CONTRACT ITEM", "CLASS", "AGENT", "CONTRACT", "VALID UNTIL")
		for _, t := range resp.GetTasks() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s v%s\t%s\n", t.GetTaskId(), t.GetContractItemId(), short(t.GetContractClass()), t.GetAgent(),
				t.GetContractId(), t.GetContractVersion(), t.GetValidUntil().AsTime().UTC().Format(time.RFC3339))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if next := resp.GetNextAfterTaskId(); next != "" {
			_, err = fmt.Fprintf(env.Stdout, "more: %s\n", nextPage(cmd, next))
		}
		return err
	}
	return cmd
}

func commitmentsCmd(env *Env) *cobra.Command {
	cmd := leaf("commitments", "list the authorised effects and where each stands (of every task, or of --task)")
	var g govFlags
	g.register(cmd.Flags())
	task := cmd.Flags().String("task", "", "only this task's commitments")
	var page pageFlags
	page.register(cmd, "capability")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := page.check("commitments", args); err != nil {
			return err
		}
		var resp *kernelv1.ListCommitmentsResponse
		err := g.call(cmd.Context(), func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
			resp, err = c.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{TaskId: *task, AfterCapabilityId: page.after, Limit: page.limit})
			return err
		})
		if err != nil {
			return fmt.Errorf("list commitments: %w", err)
		}
		if page.format == "json" {
			return writeProto(env.Stdout, resp)
		}
		if len(resp.GetCommitments()) == 0 {
			_, err := fmt.Fprintln(env.Stdout, "no commitments")
			return err
		}
		tw := table(env.Stdout, "CAPABILITY", "TOOL", "AMOUNT", "STATUS", "EFFECT", "READBACK", "NOTE")
		for _, c := range resp.GetCommitments() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.GetCapabilityId(), c.GetTool(), amount(c), strings.TrimPrefix(c.GetStatus().String(), "COMMITMENT_STATUS_"),
				dash(c.GetEffectReceiptId()), dash(c.GetReadbackReceiptId()), dash(c.GetNote()))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if next := resp.GetNextAfterCapabilityId(); next != "" {
			_, err = fmt.Fprintf(env.Stdout, "more: %s\n", nextPage(cmd, next))
		}
		return err
	}
	return cmd
}

// entryKinds are the kinds of the journal's entries: the signed receipts,
// then the ledger's transitions and the kernel's own records.
func entryKinds() []string {
	return append(slices.Clone(authority.ReceiptKinds), "canon", "task.bind", "approval.decide", "approval.cancel", "redeem", "revoke")
}

func receiptsCmd(env *Env) *cobra.Command {
	cmd := leaf("receipts", "list the journal's entries (receipts, ledger transitions, bindings) in order, of --kind only")
	var g govFlags
	g.register(cmd.Flags())
	kinds := cmd.Flags().StringSlice("kind", nil, "only entries of these kinds (repeat or separate with commas): "+strings.Join(entryKinds(), ", "))
	after := cmd.Flags().Int64("after", 0, "start after this entry (its seq)")
	limit := cmd.Flags().Int("limit", 100, "at most this many")
	format := cmd.Flags().String("format", "text", "output format: text or json")
	formats(cmd, "text", "json")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(entryKinds(), cobra.ShellCompDirectiveNoFileComp))
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkFormat(*format); err != nil {
			return err
		}
		if len(args) > 0 {
			return fmt.Errorf("%w: receipts takes no arguments, got %q", ErrUsage, args)
		}
		if *limit < 1 || *after < 0 {
			return fmt.Errorf("%w: --limit must be at least 1 and --after not negative", ErrUsage)
		}
		var entries []*ledgerv1.Entry
		more := false
		err := g.call(cmd.Context(), func(ctx context.Context, c kernelv1.GovernanceServiceClient) error {
			entries, more = nil, false
			return pageEntries(ctx, c, *after, func(e *ledgerv1.Entry) bool {
				if len(*kinds) > 0 && !slices.Contains(*kinds, e.GetKind()) {
					return true
				}
				if len(entries) == *limit {
					more = true
					return false
				}
				entries = append(entries, e)
				return true
			})
		})
		if err != nil {
			return fmt.Errorf("list journal entries: %w", err)
		}
		if *format == "json" {
			return writeProto(env.Stdout, &kernelv1.ListEntriesResponse{Entries: entries})
		}
		if len(entries) == 0 {
			_, err := fmt.Fprintln(env.Stdout, "no entries")
			return err
		}
		tw := table(env.Stdout, "SEQ", "RECORDED AT", "KIND", "REF")
		for _, e := range entries {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", e.GetSeq(), e.GetRecordedAt().AsTime().UTC().Format(time.RFC3339), e.GetKind(), e.GetRef())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if more {
			_, err = fmt.Fprintf(env.Stdout, "more: %s\n", nextPage(cmd, strconv.FormatInt(entries[len(entries)-1].GetSeq(), 10)))
		}
		return err
	}
	return cmd
}

// maxPage is the most a listing of the governance API returns at once.
const maxPage = 1000

// pageFlags are a listing's flags: where its page starts, how many it
// holds, and how it is printed.
type pageFlags struct {
	after, format string
	limit         int32
}

// register adds the flags to cmd; what names the items listed.
func (p *pageFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&p.after, "after", "", "start after this "+what+" (the next page)")
	cmd.Flags().Int32Var(&p.limit, "limit", 100, fmt.Sprintf("at most this many (at most %d)", maxPage))
	cmd.Flags().StringVar(&p.format, "format", "text", "output format: text or json")
	formats(cmd, "text", "json")
}

// check refuses flags out of range and any argument to the listing name.
func (p *pageFlags) check(name string, args []string) error {
	if err := checkFormat(p.format); err != nil {
		return err
	}
	if len(args) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", ErrUsage, name, args)
	}
	if p.limit < 1 || p.limit > maxPage {
		return fmt.Errorf("%w: --limit must be 1 to %d, got %d", ErrUsage, maxPage, p.limit)
	}
	return nil
}

// pageEntries hands each journal entry after the given position to keep,
// in order, a page at a time, until keep returns false or the journal ends.
func pageEntries(ctx context.Context, c kernelv1.GovernanceServiceClient, after int64, keep func(*ledgerv1.Entry) bool) error {
	for {
		resp, err := c.ListEntries(ctx, &kernelv1.ListEntriesRequest{AfterSeq: after, Limit: maxPage})
		if err != nil {
			return err
		}
		entries := resp.GetEntries()
		for _, e := range entries {
			if !keep(e) {
				return nil
			}
		}
		switch next := resp.GetNextAfterSeq(); {
		case next != 0:
			after = next
		case len(entries) == maxPage:
			// A kernel that does not say where to go on ends no page
			// early: a full page may have more after it.
			after = entries[len(entries)-1].GetSeq()
		default:
			return nil
		}
	}
}

// classLine is an item's class, with the reasons when it is not
// CANONICAL, e.g. "PROVISIONAL (not promoted: …)".
func classLine(it *ledgerv1.ClassifiedItem) string {
	if len(it.GetReasons()) == 0 || it.GetClass() == ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		return short(it.GetClass())
	}
	return fmt.Sprintf("%s (%s)", short(it.GetClass()), strings.Join(it.GetReasons(), "; "))
}

func amount(c *agentv1.Commitment) string {
	if c.GetAmount() == nil {
		return "-"
	}
	return money.Format(c.GetAmount())
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// table starts a table with its header; the caller writes tab-separated
// rows and flushes.
// nextPage is the command line that prints the page after this one: the
// same command with every flag the user set (its filters, its limit, the
// kernel it asked), starting after the key given.
func nextPage(cmd *cobra.Command, after string) string {
	line := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch value := f.Value.String(); {
		case f.Name == "after":
		case f.Value.Type() == "bool":
			line = append(line, "--"+f.Name+"="+value)
		default:
			if s, ok := f.Value.(pflag.SliceValue); ok {
				value = strings.Join(s.GetSlice(), ",")
			}
			line = append(line, "--"+f.Name, shellQuote(value))
		}
	})
	return strings.Join(append(line, "--after", shellQuote(after)), " ")
}

// shellQuote quotes a word for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/@=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func table(w io.Writer, header ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	return tw
}

// writeProto renders a response as indented JSON with proto field names.
func writeProto(w io.Writer, m proto.Message) error {
	js, err := protoJSON(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(js))
	return err
}

// scopeNames completes --scope.
func scopeNames(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []string
	for v := range ledgerv1.Scope_name {
		if v != 0 {
			out = append(out, ledgerv1.Scope(v).String())
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}
