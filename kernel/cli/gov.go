package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// govFlags are the flags every command that talks to a kernel's governance
// listener shares.
type govFlags struct {
	kernel, kernelName, pkiDir, as string
	timeout                        time.Duration
}

func (g *govFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.kernel, "kernel", "127.0.0.1:7703", "the kernel's governance listener")
	fs.StringVar(&g.kernelName, "kernel-name", "", "name the kernel's certificate must be valid for (default: the host of --kernel)")
	fs.StringVar(&g.pkiDir, "pki", ".ambit/pki", "the identity's key folder, or the dev PKI (ambitctl dev init) holding it as <as>/")
	fs.StringVar(&g.as, "as", "governance", "identity to act as (a governance certificate)")
	fs.DurationVar(&g.timeout, "timeout", 10*time.Second, "deadline for the call")
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

func runApprove(ctx context.Context, env *Env, args []string) error {
	return decideApproval(ctx, env, args, true)
}

func runReject(ctx context.Context, env *Env, args []string) error {
	return decideApproval(ctx, env, args, false)
}

func decideApproval(ctx context.Context, env *Env, args []string, approve bool) error {
	name := map[bool]string{true: "approve", false: "reject"}[approve]
	fs := newFlags(env, name)
	var g govFlags
	g.register(fs)
	note := fs.String("note", "", "why")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: %s [flags] APPROVAL_ID", ErrUsage, name)
	}
	var resp *kernelv1.DecideApprovalResponse
	err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
		resp, err = c.DecideApproval(ctx, &kernelv1.DecideApprovalRequest{ApprovalId: fs.Arg(0), Approve: approve, Note: *note})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", name, fs.Arg(0), err)
	}
	a := resp.GetApproval()
	fmt.Fprintf(env.Stdout, "%s %s by %s (task %s)\n", a.GetApprovalId(), strings.TrimPrefix(a.GetState().String(), "APPROVAL_STATE_"), a.GetDecidedBy(), a.GetTaskId())
	return nil
}

func runApprovals(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "approvals")
	var g govFlags
	g.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	var resp *kernelv1.ListApprovalsResponse
	err := g.call(ctx, func(ctx context.Context, c kernelv1.GovernanceServiceClient) (err error) {
		resp, err = c.ListApprovals(ctx, &kernelv1.ListApprovalsRequest{})
		return err
	})
	if err != nil {
		return fmt.Errorf("list approvals: %w", err)
	}
	if len(resp.GetApprovals()) == 0 {
		fmt.Fprintln(env.Stdout, "no pending approvals")
	}
	for _, a := range resp.GetApprovals() {
		var why []string
		for _, r := range a.GetReasons() {
			why = append(why, contract.CodeName(r.GetCode()))
		}
		fmt.Fprintf(env.Stdout, "%s  task %s  %s %s  (%s)\n", a.GetApprovalId(), a.GetTaskId(), a.GetCall().GetTool(), a.GetCall().GetArgumentsJson(), strings.Join(why, ", "))
	}
	return nil
}
