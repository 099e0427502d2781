package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// govFlags are the flags every command that talks to a kernel's governance
// listener shares. A stored context (ambitctl context) gives those not
// given on the command line.
type govFlags struct {
	kernel, kernelName, pkiDir, as, context string
	timeout                                 time.Duration
	// flags tells which were given; resolved, that the context was read.
	flags    *pflag.FlagSet
	resolved bool
}

func (g *govFlags) register(fs *pflag.FlagSet) {
	g.flags = fs
	fs.StringVar(&g.kernel, "kernel", "127.0.0.1:7703", "the kernel's governance listener (default: the context's, else this)")
	fs.StringVar(&g.kernelName, "kernel-name", "", "name the kernel's certificate must be valid for (default: the context's, else the host of --kernel)")
	fs.StringVar(&g.pkiDir, "pki", ".ambit/pki", "the identity's key folder, or the dev PKI (ambitctl dev init) holding it as <as>/ (default: the context's, else this)")
	fs.StringVar(&g.as, "as", "governance", "identity to act as, a governance certificate (default: the context's, else this)")
	fs.StringVar(&g.context, "context", "", "the stored context to use (default: the one in use; ambitctl context list)")
	fs.DurationVar(&g.timeout, "timeout", 10*time.Second, "deadline for the call")
	_ = fs.SetAnnotation("pki", cobra.BashCompSubdirsInDir, []string{})
}

// identityDir is the folder of --as: --pki itself when it holds the
// identity's certificate, else its folder in the dev PKI.
func (g *govFlags) identityDir() string {
	if _, err := os.Stat(filepath.Join(g.pkiDir, g.as+".pem")); err == nil {
		return g.pkiDir
	}
	return pki.IdentityDir(g.pkiDir, g.as)
}

// call runs fn against the governance listener, authenticated as --as,
// within --timeout. The server must present a kernel's certificate.
func (g *govFlags) call(ctx context.Context, fn func(context.Context, kernelv1.GovernanceServiceClient) error) error {
	if err := g.withContext(); err != nil {
		return err
	}
	tlsCfg, err := pki.ClientTLS(g.identityDir(), g.as, pki.Expect{Role: pki.RoleKernel, ServerName: g.kernelName})
	if err != nil {
		return err
	}
	conn, err := serve.Dial(ctx, g.kernel, tlsCfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return fn(ctx, kernelv1.NewGovernanceServiceClient(conn))
}

func approveCmd(env *Env, approve bool) *cobra.Command {
	name := map[bool]string{true: "approve", false: "reject"}[approve]
	cmd := leaf(name+" APPROVAL_ID", name+" a pending approval as a governance identity")
	var g govFlags
	g.register(cmd.Flags())
	note := cmd.Flags().String("note", "", "why")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return decideApproval(cmd.Context(), env, &g, name, approve, *note, args)
	}
	return cmd
}

func decideApproval(ctx context.Context, env *Env, g *govFlags, name string, approve bool, note string, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: %s [flags] APPROVAL_ID", ErrUsage, name)
	}
	var resp *kernelv1.DecideApprovalResponse
	err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
		resp, err = c.DecideApproval(ctx, &kernelv1.DecideApprovalRequest{ApprovalId: args[0], Approve: approve, Note: note})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", name, args[0], err)
	}
	a := resp.GetApproval()
	fmt.Fprintf(env.Stdout, "%s %s by %s (task %s)\n", a.GetApprovalId(), strings.TrimPrefix(a.GetState().String(), "APPROVAL_STATE_"), a.GetDecidedBy(), a.GetTaskId())
	return nil
}

func approvalsCmd(env *Env) *cobra.Command {
	cmd := leaf("approvals", "list the approvals in one state (pending by default), oldest first")
	var g govFlags
	g.register(cmd.Flags())
	var q approvalsQuery
	cmd.Flags().StringVar(&q.state, "state", "pending", "only approvals in this state: "+strings.Join(approvalStates(), ", "))
	q.register(cmd, "approval")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(approvalStates(), cobra.ShellCompDirectiveNoFileComp))
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return runApprovals(cmd, env, &g, &q, args) }
	return cmd
}

// approvalsQuery is what ambitctl approvals was asked for.
type approvalsQuery struct {
	state string
	pageFlags
}

// approvalStates are the states ambitctl approvals takes, lower case.
func approvalStates() []string {
	var out []string
	for i := int32(1); ; i++ {
		name, ok := kernelv1.ApprovalState_name[i]
		if !ok {
			return out
		}
		out = append(out, strings.ToLower(strings.TrimPrefix(name, "APPROVAL_STATE_")))
	}
}

func runApprovals(cmd *cobra.Command, env *Env, g *govFlags, q *approvalsQuery, args []string) error {
	if err := q.check("approvals", args); err != nil {
		return err
	}
	state, ok := kernelv1.ApprovalState_value["APPROVAL_STATE_"+strings.ToUpper(q.state)]
	if !ok || state == 0 {
		return fmt.Errorf("%w: --state must be one of %s, got %q", ErrUsage, strings.Join(approvalStates(), ", "), q.state)
	}
	var resp *kernelv1.ListApprovalsResponse
	err := g.call(cmd.Context(), func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
		resp, err = c.ListApprovals(ctx, &kernelv1.ListApprovalsRequest{State: kernelv1.ApprovalState(state), AfterApprovalId: q.after, Limit: q.limit})
		return err
	})
	if err != nil {
		return fmt.Errorf("list approvals: %w", err)
	}
	if q.format == "json" {
		return writeProto(env.Stdout, resp)
	}
	if len(resp.GetApprovals()) == 0 {
		_, err := fmt.Fprintf(env.Stdout, "no %s approvals\n", strings.ToLower(q.state))
		return err
	}
	tw := table(env.Stdout, "APPROVAL", "TASK", "ASKED AT", "CALL", "REASONS", "DECIDED BY", "NOTE")
	for _, a := range resp.GetApprovals() {
		var why []string
		for _, r := range a.GetReasons() {
			why = append(why, contract.CodeName(r.GetCode()))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%s\t%s\n", a.GetApprovalId(), a.GetTaskId(), a.GetRequestedAt().AsTime().UTC().Format(time.RFC3339),
			a.GetCall().GetTool(), a.GetCall().GetArgumentsJson(), strings.Join(why, ", "), dash(a.GetDecidedBy()), dash(a.GetNote()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next := resp.GetNextAfterApprovalId(); next != "" {
		_, err = fmt.Fprintf(env.Stdout, "more: %s\n", nextPage(cmd, next))
	}
	return err
}
