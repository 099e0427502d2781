package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ambitkernel/ambit/examples/demo"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Audit is what the stack holds once the agents are done, read from the
// targets (the payments table, the desk's credits), the kernel's journal
// and commitments, and the action adapter's key table.
type Audit struct {
	// Intended is the effects the agents set out to make: one per loop.
	Intended int
	// Payments and Credits are the effects in the two targets.
	Payments, Credits int
	// EffectReceipts are the effect receipts in the kernel's journal.
	EffectReceipts int
	// Lost are the loops' tasks with no effect in their target.
	Lost []string
	// Duplicates are idempotency keys, tasks and capabilities with more
	// than one effect in a target or more than one effect receipt.
	Duplicates []string
	// Unreceipted are effects in a target without an effect receipt in
	// the journal (or whose receipt names another record).
	Unreceipted []string
	// Phantoms are effect receipts in the journal without their effect in
	// the target.
	Phantoms []string
	// Unintended are effects in a target that no loop made.
	Unintended []string
	// Commitments count the kernel's commitments by status (the name
	// without COMMITMENT_STATUS_); Open names those still AUTHORISED,
	// REDEEMED or EFFECTED.
	Commitments map[string]int
	Open        []string
	// Entries are the journal's entries; Receipts count its signed
	// receipts by kind, BadReceipts those whose signature does not verify
	// against their issuer's key.
	Entries     int
	Receipts    map[string]int
	BadReceipts []string
	// KernelStarts are the kernel's starts, JournalVerified those that
	// verified the journal against the kernel's checkpoints first.
	KernelStarts, JournalVerified int
	// StartedKeys are the action adapter's keys still Started (an effect
	// it could not settle); UnrecordedKeys are Done keys it has not yet
	// seen the kernel log.
	StartedKeys, UnrecordedKeys int
	// Resumed are effects made on a first attempt at their key whose
	// redemption the kernel answered as a retry: an earlier attempt
	// redeemed the capability and died, or lost the kernel's answer,
	// before writing its key (from the action adapter's log).
	Resumed int
	// RepeatedProposals are proposals the kernel answered again for a
	// request id it had decided (from its log).
	RepeatedProposals int
}

// effect is one effect in a target.
type effect struct {
	key, ref, task, tool string
}

// issuers sign the journal's receipts, by kind.
var issuers = map[string]struct {
	key  string
	into func() proto.Message
}{
	"decision":   {devstack.Kernel, func() proto.Message { return &receiptv1.DecisionReceipt{} }},
	"capability": {devstack.Kernel, func() proto.Message { return &receiptv1.Capability{} }},
	"evidence":   {devstack.Evidence, func() proto.Message { return &receiptv1.EvidenceReceipt{} }},
	"effect":     {devstack.Action, func() proto.Message { return &receiptv1.EffectReceipt{} }},
	"refusal":    {devstack.Action, func() proto.Message { return &receiptv1.RefusalReceipt{} }},
	"readback":   {devstack.Verifier, func() proto.Message { return &receiptv1.ReadbackReceipt{} }},
}

func audit(ctx context.Context, st *devstack.Stack, gov kernelv1.GovernanceServiceClient, fig *Figures) (*Audit, error) {
	a := &Audit{Intended: len(fig.Loops), Commitments: map[string]int{}, Receipts: map[string]int{}}
	effects, err := targetEffects(ctx, st, fig.Loops)
	if err != nil {
		return nil, err
	}
	receipts, err := a.journal(ctx, st, gov)
	if err != nil {
		return nil, err
	}
	a.compare(fig.Loops, effects, receipts)
	if err := a.commitments(ctx, gov); err != nil {
		return nil, err
	}
	if err := a.keys(ctx, st); err != nil {
		return nil, err
	}
	log, err := logOf(st, devstack.Kernel)
	if err != nil {
		return nil, err
	}
	a.KernelStarts = strings.Count(log, `"msg":"starting"`)
	a.JournalVerified = strings.Count(log, `"msg":"journal verified"`)
	a.RepeatedProposals = strings.Count(log, `"msg":"proposal repeated"`)
	if log, err = logOf(st, devstack.Action); err != nil {
		return nil, err
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"msg":"effect"`) && strings.Contains(line, `"repeated":false`) && strings.Contains(line, `"first_redemption":false`) {
			a.Resumed++
		}
	}
	for _, e := range effects {
		if e.tool == "issue_credit" {
			a.Credits++
		} else {
			a.Payments++
		}
	}
	return a, nil
}

// targetEffects reads every payment and every credit.
func targetEffects(ctx context.Context, st *devstack.Stack, loops []Outcome) ([]effect, error) {
	var out []effect
	// A refund's record_ref is its payment_id, the effect's own id.
	err := query(ctx, filepath.Join(st.DataDir, "payments.db"), `SELECT idempotency_key, payment_id, task_id FROM payments`, func(s scanner) error {
		e := effect{tool: "refund"}
		if err := s.Scan(&e.key, &e.ref, &e.task); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := st.Example(demo.Supportdesk); !ok {
		return out, nil
	}
	// A credit names its ticket; each loop has a ticket of its own.
	taskOf := map[string]string{}
	for _, l := range loops {
		if l.Example == demo.Supportdesk {
			taskOf[l.Record] = l.Task
		}
	}
	err = query(ctx, filepath.Join(st.DataDir, "desk.db"), `SELECT idempotency_key, seq, ticket_id FROM credits`, func(s scanner) error {
		var key, ticket string
		var seq int64
		if err := s.Scan(&key, &seq, &ticket); err != nil {
			return err
		}
		task := taskOf[ticket]
		if task == "" {
			task = "ticket " + ticket
		}
		// The desk's credit_id, the effect's record_ref.
		out = append(out, effect{key: key, ref: "credit-" + strconv.FormatInt(seq, 10), task: task, tool: "issue_credit"})
		return nil
	})
	return out, err
}

type scanner interface{ Scan(dest ...any) error }

func query(ctx context.Context, path, q string, row func(scanner) error) error {
	db, err := sqldb.OpenReadOnly(path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return rows.Err()
}

// journal pages through the kernel's journal, verifying every signed
// receipt against its issuer's key, and returns the effect receipts.
func (a *Audit) journal(ctx context.Context, st *devstack.Stack, gov kernelv1.GovernanceServiceClient) ([]*receiptv1.EffectReceipt, error) {
	keys, err := st.Keys()
	if err != nil {
		return nil, err
	}
	var effects []*receiptv1.EffectReceipt
	for after := int64(0); ; {
		resp, err := gov.ListEntries(ctx, &kernelv1.ListEntriesRequest{AfterSeq: after, Limit: 1000})
		if err != nil {
			return nil, fmt.Errorf("list entries after %d: %w", after, err)
		}
		if len(resp.GetEntries()) == 0 {
			return effects, nil
		}
		for _, e := range resp.GetEntries() {
			after = e.GetSeq()
			a.Entries++
			iss, ok := issuers[e.GetKind()]
			if !ok {
				continue
			}
			a.Receipts[e.GetKind()]++
			var env receiptv1.Envelope
			m := iss.into()
			err := proto.Unmarshal(e.GetBody(), &env)
			if err == nil {
				err = keys.Open(&env, iss.key, m)
			}
			if err != nil {
				a.BadReceipts = append(a.BadReceipts, fmt.Sprintf("entry %d (%s %s): %v", e.GetSeq(), e.GetKind(), e.GetRef(), err))
				continue
			}
			if eff, ok := m.(*receiptv1.EffectReceipt); ok {
				effects = append(effects, eff)
			}
		}
	}
}

// compare matches the targets' effects with the journal's effect
// receipts by idempotency key, and both with the loops' tasks.
func (a *Audit) compare(loops []Outcome, effects []effect, receipts []*receiptv1.EffectReceipt) {
	a.EffectReceipts = len(receipts)
	byKey := map[string][]effect{}
	byTask := map[string]int{}
	for _, e := range effects {
		byKey[e.key] = append(byKey[e.key], e)
		byTask[e.task]++
	}
	receiptsByKey := map[string][]*receiptv1.EffectReceipt{}
	perCapability := map[string]int{}
	for _, r := range receipts {
		receiptsByKey[r.GetIdempotencyKey()] = append(receiptsByKey[r.GetIdempotencyKey()], r)
		perCapability[r.GetCapabilityId()]++
	}
	for _, key := range sortedKeys(byKey) {
		es, rs := byKey[key], receiptsByKey[key]
		switch {
		case len(es) > 1:
			a.Duplicates = append(a.Duplicates, fmt.Sprintf("key %s: %d effects in the target", key, len(es)))
		case len(rs) == 0:
			a.Unreceipted = append(a.Unreceipted, fmt.Sprintf("%s of task %s (key %s): no effect receipt in the journal", es[0].ref, es[0].task, key))
		case !slices.ContainsFunc(rs, func(r *receiptv1.EffectReceipt) bool { return r.GetRecordRef() == es[0].ref }):
			a.Unreceipted = append(a.Unreceipted, fmt.Sprintf("%s of task %s (key %s): the journal's receipt names %s", es[0].ref, es[0].task, key, rs[0].GetRecordRef()))
		}
	}
	for _, key := range sortedKeys(receiptsByKey) {
		rs := receiptsByKey[key]
		if len(rs) > 1 {
			a.Duplicates = append(a.Duplicates, fmt.Sprintf("key %s: %d effect receipts in the journal", key, len(rs)))
		}
		if len(byKey[key]) == 0 {
			a.Phantoms = append(a.Phantoms, fmt.Sprintf("effect receipt %s of task %s (key %s): no effect in the target", rs[0].GetReceiptId(), rs[0].GetTaskId(), key))
		}
	}
	for _, c := range sortedKeys(perCapability) {
		if perCapability[c] > 1 {
			a.Duplicates = append(a.Duplicates, fmt.Sprintf("capability %s: %d effect receipts", c, perCapability[c]))
		}
	}
	intended := map[string]bool{}
	for _, l := range loops {
		intended[l.Task] = true
		switch n := byTask[l.Task]; {
		case n == 0:
			a.Lost = append(a.Lost, l.String())
		case n > 1:
			a.Duplicates = append(a.Duplicates, fmt.Sprintf("task %s: %d effects in the target", l.Task, n))
		}
	}
	for _, task := range sortedKeys(byTask) {
		if !intended[task] {
			a.Unintended = append(a.Unintended, fmt.Sprintf("task %s: %d effects", task, byTask[task]))
		}
	}
}

// commitments counts the kernel's commitments by status.
func (a *Audit) commitments(ctx context.Context, gov kernelv1.GovernanceServiceClient) error {
	var all []*agentv1.Commitment
	req := &kernelv1.ListCommitmentsRequest{Limit: 1000}
	for {
		resp, err := gov.ListCommitments(ctx, req)
		if err != nil {
			return fmt.Errorf("list commitments: %w", err)
		}
		all = append(all, resp.GetCommitments()...)
		if req.AfterCapabilityId = resp.GetNextAfterCapabilityId(); req.AfterCapabilityId == "" {
			break
		}
	}
	for _, c := range all {
		a.Commitments[strings.TrimPrefix(c.GetStatus().String(), "COMMITMENT_STATUS_")]++
		switch c.GetStatus() {
		case agentv1.CommitmentStatus_COMMITMENT_STATUS_AUTHORISED, agentv1.CommitmentStatus_COMMITMENT_STATUS_REDEEMED,
			agentv1.CommitmentStatus_COMMITMENT_STATUS_EFFECTED:
			a.Open = append(a.Open, fmt.Sprintf("%s (%s, %s, decision %s)", c.GetCapabilityId(), c.GetTool(), c.GetStatus(), c.GetDecisionId()))
		}
	}
	return nil
}

// keys reads the action adapter's key table.
func (a *Audit) keys(ctx context.Context, st *devstack.Stack) error {
	return query(ctx, filepath.Join(st.DataDir, "action.db"),
		`SELECT COALESCE(SUM(state = 'started'), 0), COALESCE(SUM(state = 'done' AND recorded = 0), 0) FROM ambit_effect_keys`,
		func(s scanner) error { return s.Scan(&a.StartedKeys, &a.UnrecordedKeys) })
}

// Ledger is `ambitctl ledger verify` on the final journal and the kernel's
// checkpoint directory.
type Ledger struct {
	// Command and Output are what ran and what it printed.
	Command, Output string
	// OK is true when it verified; Entries is the journal's size it
	// reported, Checkpoints the checkpoints the directory holds.
	OK          bool
	Entries     int
	Checkpoints int
}

var verifiedEntries = regexp.MustCompile(`(?m)^OK\s+(\d+) entries`)

// VerifyLedger runs ambitctl ledger verify --db on the stopped stack's
// kernel database against every checkpoint the kernel signed, checked
// with the kernel's public key from a governance identity's folder.
func VerifyLedger(ctx context.Context, ambitctl string, st *devstack.Stack) (*Ledger, error) {
	dir := st.CheckpointDir(devstack.Kernel)
	args := []string{"ledger", "verify", "--db", st.KernelDB, "--checkpoint", dir, "--pki", pki.IdentityDir(st.PKI, devstack.Governance)}
	out, err := exec.CommandContext(ctx, ambitctl, args...).CombinedOutput()
	l := &Ledger{Command: "ambitctl " + strings.Join(args, " "), Output: strings.TrimSpace(string(out)), OK: err == nil}
	if m := verifiedEntries.FindStringSubmatch(l.Output); m != nil {
		l.Entries, _ = strconv.Atoi(m[1])
	} else {
		l.OK = false
	}
	matches, gerr := filepath.Glob(filepath.Join(dir, "checkpoint-*"))
	if gerr != nil {
		return nil, gerr
	}
	l.Checkpoints = len(matches)
	return l, nil
}

// logOf reads a process's log, in which the audit counts lines.
func logOf(st *devstack.Stack, name string) (string, error) {
	data, err := os.ReadFile(st.LogPath(name))
	return string(data), err
}
