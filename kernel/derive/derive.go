package derive

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/evaluate"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/toolcall"
)

// ErrArguments marks a call whose arguments do not fit its tool.
var ErrArguments = contract.ErrArguments

// Plan is what a call needs gathered.
type Plan struct {
	// Tool is the granted tool, nil when the call names a tool the contract
	// does not grant (a decision, DENY, not an error).
	Tool *contract.Tool
	// Record is the record ("source/key") the call touches, "" for none.
	Record string
	// Amount is the call's amount; zero when the tool moves no money.
	Amount evaluate.Money
}

// PlanCall checks a call against its tool and says what it touches. A
// granted tool's arguments must fit its declaration.
func PlanCall(c *contract.Compiled, call *toolcall.Call) (Plan, error) {
	var p Plan
	if r := c.Proto.GetBinding().GetRecord(); r != nil {
		p.Record = r.GetSource() + "/" + r.GetKey()
	}
	t, ok := c.Tools[call.Tool]
	if !ok {
		return p, nil
	}
	p.Tool = t
	if err := t.Check(call); err != nil {
		return p, err
	}
	if r := t.Grant.GetRecord(); r != nil {
		key, ok := call.String(r.GetArgument())
		if !ok || key == "" {
			return p, fmt.Errorf("%w: tool %q: argument %q names the record and must be a non-empty string", ErrArguments, call.Tool, r.GetArgument())
		}
		p.Record = r.GetSource() + "/" + key
	}
	if a := t.Grant.GetAmountArgument(); a != "" {
		m, present, err := call.Money(a)
		if err != nil {
			return p, fmt.Errorf("%w: %v", ErrArguments, err)
		}
		if present {
			p.Amount = evaluate.Money{Currency: m.Currency, Minor: m.Minor}
		}
	}
	return p, nil
}

// Usage is what the task's earlier capabilities use up.
type Usage struct {
	// Count is the number of earlier actions that count against the grant.
	Count int32
	// Minor is their amount in the call's currency.
	Minor int64
}

// Input is everything a decision's facts come from.
type Input struct {
	Contract *contract.Compiled
	// Class is the contract's ledger class when it is not CANONICAL, ""
	// when it is.
	Class   string
	TaskID  string
	Purpose string
	Call    *toolcall.Call
	Plan    Plan
	// Evidence are the cited receipts, verified against what the kernel
	// recorded.
	Evidence []*receiptv1.EvidenceReceipt
	// Versions maps records ("source/key") to the last state version the
	// kernel saw.
	Versions map[string]string
	Usage    Usage
	Approved bool
	Now      time.Time
}

// Facts derives the evaluator's input. Every expression runs here, on the
// call and on values the kernel verified; none of it is taken from what the
// agent says.
func Facts(in *Input) evaluate.Facts {
	c, call, plan := in.Contract, in.Call, in.Plan
	f := evaluate.Facts{
		Purpose:         in.Purpose,
		Record:          plan.Record,
		ContractClass:   in.Class,
		Tool:            call.Tool,
		Amount:          plan.Amount,
		ApprovalPresent: in.Approved,
	}
	// The state read is the latest trusted-for-state read of the call's
	// record (of any record when the call touches none): quarantined text
	// never establishes state.
	var state *receiptv1.EvidenceReceipt
	subject := c.Proto.GetBinding().GetSubject()
	foreign := false
	for _, r := range in.Evidence {
		rec := r.GetSource() + "/" + r.GetRecordKey()
		quarantined := len(r.GetQuarantined()) > 0 && len(r.GetQuarantined()) == len(r.GetFields())
		f.Evidence = append(f.Evidence, evaluate.Evidence{
			Source:      r.GetSource(),
			Record:      rec,
			Fields:      r.GetFields(),
			AgeSeconds:  age(in.Now, r.GetReadAt().AsTime()),
			Provenance:  evaluate.Provenance(r.GetProvenance()),
			Quarantined: quarantined,
		})
		if quarantined {
			continue
		}
		if rec == plan.Record || plan.Record == "" {
			if state == nil || r.GetReadAt().AsTime().After(state.GetReadAt().AsTime()) {
				state = r
			}
		}
		// Evidence about anyone but the bound subject makes the proposal
		// about them.
		if subject != "*" && r.GetSubject() != subject {
			f.Subject, foreign = r.GetSubject(), true
		}
	}
	record := recordValues(in)
	switch {
	case state != nil:
		if !foreign {
			f.Subject = state.GetSubject()
		}
		f.StateVersion = state.GetStateVersion()
		if plan.Record == "" {
			f.Record = state.GetSource() + "/" + state.GetRecordKey()
		}
		f.CurrentStateVersion = in.Versions[state.GetSource()+"/"+state.GetRecordKey()]
	case !foreign && subject != "*":
		// Nothing read about the record: the subject is the task's, and the
		// missing evidence surfaces as a review, not as another task.
		f.Subject = subject
	}
	usageFacts(&f, in.Usage)
	Call(&f, plan, call, record, Task{ID: in.TaskID, Subject: subject, Purpose: c.Proto.GetBinding().GetPurpose()}, in.Usage)
	return f
}

// recordValues are the record's values the call's tool reads in an
// expression: the non-quarantined fields of every read of the call's
// record, a later read winning. nil when the tool reads none.
func recordValues(in *Input) map[string]any {
	plan := in.Plan
	if plan.Tool == nil || plan.Record == "" {
		return nil
	}
	read, ok := plan.Tool.Reads["record"]
	if !ok {
		return nil
	}
	record := map[string]any{}
	for _, r := range sortedByReadAt(in.Evidence) {
		if r.GetSource()+"/"+r.GetRecordKey() != plan.Record {
			continue
		}
		for k, v := range r.GetValues().GetFields() {
			if (read.Whole || slices.Contains(read.Keys, k)) && !slices.Contains(r.GetQuarantined(), k) {
				record[k] = v.AsInterface()
			}
		}
	}
	return record
}

// usageFacts sets the facts counted from the task's usage.
func usageFacts(f *evaluate.Facts, u Usage) {
	f.ActionCount = u.Count + 1
	f.PriorAmount = evaluate.Money{}
	if !f.Amount.IsZero() && u.Minor > 0 {
		f.PriorAmount = evaluate.Money{Currency: f.Amount.Currency, Minor: u.Minor}
	}
}

// WithUsage returns the facts Facts derives with usage u from the input
// f was derived from, without deriving them again: ok is false when the
// call's tool reads usage in an expression, and only Facts can.
func WithUsage(f evaluate.Facts, plan Plan, u Usage) (_ evaluate.Facts, ok bool) {
	if plan.Tool != nil && plan.Tool.ReadsUsage() {
		return f, false
	}
	usageFacts(&f, u)
	return f, true
}

// Task is what tool expressions know of the task.
type Task struct {
	ID, Subject, Purpose string
}

// Call derives what the call's tool declares: irreversibility, the
// destination class (the first whose condition holds over the arguments,
// the record's values, the task and its usage) and every failed
// constraint. A tool outside the grant derives nothing. Destination
// conditions that cannot be evaluated for want of a record value leave the
// destination unresolved; a constraint that cannot be evaluated fails.
func Call(f *evaluate.Facts, plan Plan, call *toolcall.Call, record map[string]any, task Task, usage Usage) {
	if plan.Tool == nil {
		return
	}
	f.Irreversible = plan.Tool.Grant.GetIrreversible()
	// Only what the expressions read: a variable they do not read reads as
	// empty, and a key they do not name is never looked up.
	reads := plan.Tool.Reads
	vars := make(expr.Vars, len(reads))
	if r, ok := reads["args"]; ok {
		vars["args"] = nativeArgs(call.Args, r)
	}
	if _, ok := reads["record"]; ok && record != nil {
		vars["record"] = record
	}
	if _, ok := reads["task"]; ok {
		vars["task"] = map[string]any{
			"task_id":    task.ID,
			"subject":    task.Subject,
			"purpose":    task.Purpose,
			"record_key": recordKey(plan.Record),
		}
	}
	if _, ok := reads["usage"]; ok {
		vars["usage"] = map[string]any{
			"count":        int64(usage.Count),
			"amount_minor": usage.Minor,
			"currency":     plan.Amount.Currency,
		}
	}
	unresolved := false
	for _, d := range plan.Tool.Destinations {
		ok, err := d.When.Bool(vars)
		if err != nil {
			unresolved = true
			continue
		}
		if ok {
			f.Destination = d.Name
			break
		}
	}
	f.DestinationUnresolved = f.Destination == "" && unresolved
	for _, k := range plan.Tool.Constraints {
		ok, err := k.Expr.Bool(vars)
		switch {
		case err != nil:
			// Fail closed: a constraint that cannot be checked does not hold.
			f.Violations = append(f.Violations, evaluate.Violation{Code: k.Code, Message: joinMsg(k.Message, "could not be checked: "+shortErr(err))})
		case !ok:
			f.Violations = append(f.Violations, evaluate.Violation{Code: k.Code, Message: k.Message})
		}
	}
}

// nativeArgs are the arguments r reads, as expressions take them
// (toolcall.Native).
func nativeArgs(args map[string]any, r contract.Read) map[string]any {
	if r.Whole {
		return toolcall.Native(args).(map[string]any)
	}
	out := make(map[string]any, len(r.Keys))
	for _, k := range r.Keys {
		if v, ok := args[k]; ok {
			out[k] = toolcall.Native(v)
		}
	}
	return out
}

// age is how old a read is in whole seconds, rounded up: evidence one
// nanosecond past a limit is too old.
func age(now, readAt time.Time) int64 {
	d := now.Sub(readAt)
	if d < 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func sortedByReadAt(ev []*receiptv1.EvidenceReceipt) []*receiptv1.EvidenceReceipt {
	out := slices.Clone(ev)
	slices.SortStableFunc(out, func(a, b *receiptv1.EvidenceReceipt) int {
		return a.GetReadAt().AsTime().Compare(b.GetReadAt().AsTime())
	})
	return out
}

func recordKey(record string) string {
	if _, key, ok := strings.Cut(record, "/"); ok {
		return key
	}
	return ""
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + " (" + b + ")"
}

// shortErr keeps an evaluation error's last clause: the expression is
// already named by the constraint's code.
func shortErr(err error) string {
	var e interface{ Unwrap() error }
	for errors.As(err, &e) && e.Unwrap() != nil {
		err = e.Unwrap()
	}
	return err.Error()
}
