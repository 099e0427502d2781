package examples_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
	"github.com/ambitkernel/ambit/examples"
	"github.com/ambitkernel/ambit/examples/expense-refund/refunddata"
	"github.com/ambitkernel/ambit/examples/supportdesk/desk"
	"github.com/ambitkernel/ambit/sdk/expr"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
)

// These tests run each example's declarations against its real data — the
// SQLite files refunddata makes, the desk's MCP server on a loopback port
// — the way the adapters and the verifier use them: a source's record and
// state version, a derived field, an executor's write and the readback's
// checks over it.

// evalAny evaluates an expression to any value, maps and lists included:
// an MCP executor passes the call's Money object whole (amount:
// args.amount), which a scalar evaluation would refuse.
func evalAny(t *testing.T, src string, vars expr.Vars) any {
	t.Helper()
	dyn := cel.MapType(cel.StringType, cel.DynType)
	env, err := cel.NewEnv(cel.Variable("args", dyn), cel.Variable("call", dyn), cel.Variable("effect", dyn),
		cel.Variable("result", dyn), cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(), ext.Strings())
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		t.Fatalf("%q: %v", src, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"args": map[string]any{}, "call": map[string]any{}, "effect": map[string]any{}, "result": map[string]any{}}
	maps.Copy(in, vars)
	out, _, err := prg.Eval(in)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return out.Value()
}

func value(t *testing.T, env *expr.Env, src string, vars expr.Vars) any {
	t.Helper()
	p, err := env.Compile(src, expr.Scalar)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Value(vars)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return v
}

// failed evaluates a readback's checks and returns the codes of those that
// do not hold; one that cannot be evaluated does not hold.
func failed(t *testing.T, rb readback, vars expr.Vars) []string {
	t.Helper()
	var out []string
	for _, c := range rb.Checks {
		p, err := readbackEnv.Compile(c.Expression, expr.Bool)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := p.Bool(vars); err != nil || !ok {
			out = append(out, c.Code)
		}
	}
	return out
}

// derived evaluates a contract's derived field of a source over a record.
func derived(t *testing.T, d *domain, source, field string, record map[string]any) any {
	t.Helper()
	for _, s := range d.contract.GetEvidence().GetSources() {
		for _, f := range s.GetDerived() {
			if s.GetName() == source && f.GetName() == field {
				return value(t, recordEnv, f.GetExpression(), expr.Vars{"record": record})
			}
		}
	}
	t.Fatalf("no derived field %s.%s", source, field)
	return nil
}

// selectRows reads the named columns of the rows whose key column is key.
func selectRows(t *testing.T, db *sql.DB, table, keyColumn, key string, columns []string) []any {
	t.Helper()
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = sqldb.Ident(c)
	}
	rows, err := db.Query(`SELECT `+strings.Join(quoted, ", ")+` FROM `+sqldb.Ident(table)+` WHERE `+sqldb.Ident(keyColumn)+` = ?`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []any{}
	for rows.Next() {
		vals := make([]any, len(columns))
		ptrs := make([]any, len(columns))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]any{}
		for i, c := range columns {
			row[c] = vals[i]
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExpenseRefundOnItsData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := refunddata.Create(ctx, dir); err != nil {
		t.Fatal(err)
	}
	d := load(t, examples.ExpenseRefund, refunddata.DemoClaim1001, map[string]string{examples.Data: dir})
	open := func(dsn string) *sql.DB {
		db, err := sqldb.OpenReadOnly(dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}

	// Sources: the bound claim is at the contract's state version; the
	// receipt's text arrives verbatim, but only as quarantined text.
	claims := d.evidence.Sources["claims_db"].SQL
	rows := selectRows(t, open(claims.Database), claims.Table, claims.Key, refunddata.DemoClaim1001, claims.Columns)
	if len(rows) != 1 {
		t.Fatalf("claims_db %s: %d rows", refunddata.DemoClaim1001, len(rows))
	}
	claim := rows[0].(map[string]any)
	if got := value(t, recordEnv, claims.StateVersion, expr.Vars{"record": claim}); got != d.contract.GetBinding().GetStateVersion() {
		t.Errorf("claims_db state version = %v, want the binding's %s", got, d.contract.GetBinding().GetStateVersion())
	}
	if claim[claims.Subject] != d.contract.GetBinding().GetSubject() {
		t.Errorf("claims_db subject = %v, want %s", claim[claims.Subject], d.contract.GetBinding().GetSubject())
	}
	receipts := d.evidence.Sources["receipt_upload"].SQL
	receipt := selectRows(t, open(receipts.Database), receipts.Table, receipts.Key, refunddata.DemoReceipt2002, receipts.Columns)[0].(map[string]any)
	if receipt["claim_id"] != refunddata.DemoClaim1002 || receipt["receipt_text"] != refunddata.DemoInjection {
		t.Errorf("receipt R-2002 = %v", receipt)
	}
	if got := value(t, recordEnv, receipts.StateVersion, expr.Vars{"record": receipt}); got != refunddata.DemoReceiptsStateVersion {
		t.Errorf("receipt_upload state version = %v", got)
	}
	for total, want := range map[string]bool{"38.25": true, "100.00": true, "100.01": false} {
		receipt["receipt_total"] = total
		if got := derived(t, d, "receipt_upload", "receipt_total_within_limit", receipt); got != want {
			t.Errorf("receipt_total_within_limit(%s) = %v, want %v", total, got, want)
		}
	}

	// The state check sees an HR edit of the claim.
	check := d.action.StateChecks["claims_db"].SQL
	version := func() any {
		row := selectRows(t, open(check.Database), check.Table, check.Key, refunddata.DemoClaim1001, check.Columns)[0]
		return value(t, recordEnv, check.StateVersion, expr.Vars{"record": row})
	}
	if got := version(); got != "claims-v42" {
		t.Errorf("state check = %v, want claims-v42", got)
	}
	rw, err := sqldb.Open(filepath.Join(dir, refunddata.ClaimsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if err := refunddata.EditClaim(ctx, rw, refunddata.DemoClaim1001, "18.00"); err != nil {
		t.Fatal(err)
	}
	if got := version(); got != "claims-v43" {
		t.Errorf("state check after an edit = %v, want claims-v43", got)
	}

	// The executor writes a payment; the readback finds exactly it.
	exec := d.action.Executors["refund"].SQL
	payments, err := sqldb.Open(exec.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer payments.Close()
	args := func(minor int64) map[string]any {
		return map[string]any{"claim_id": "C-1001", "payee_id": "employee-7", "reason_code": "TRAVEL",
			"amount": map[string]any{"currency_code": "GBP", "minor_units": minor}}
	}
	call := map[string]any{"tool": "refund", "destination": "claimant", "record": "claims_db/C-1001", "state_version": "claims-v42"}
	effect := func(key string) map[string]any {
		return map[string]any{"id": "pay-" + key, "idempotency_key": key, "capability_id": "cap-" + key, "task_id": "task-1"}
	}
	write := func(key string, a map[string]any) error {
		cols := slices.Sorted(maps.Keys(exec.Columns))
		names, marks := []string{sqldb.Ident(exec.KeyColumn)}, []string{"?"}
		vals := []any{key}
		for _, c := range cols {
			names, marks = append(names, sqldb.Ident(c)), append(marks, "?")
			vals = append(vals, value(t, mappingEnv, exec.Columns[c], expr.Vars{"args": a, "call": call, "effect": effect(key)}))
		}
		_, err := payments.Exec(`INSERT INTO `+sqldb.Ident(exec.Table)+` (`+strings.Join(names, ", ")+`) VALUES (`+strings.Join(marks, ", ")+`)`, vals...)
		return err
	}
	if err := write("k-1", args(1740)); err != nil {
		t.Fatal(err)
	}
	if err := write("k-1", args(1740)); err == nil {
		t.Error("a second payment under one key was written")
	}
	if err := write("k-2", args(1741)); err != nil { // not what was granted below
		t.Fatal(err)
	}
	rb := d.verifier.Readbacks["refund"]
	ledger := open(rb.SQL.Database)
	tests := []struct {
		name, key string
		want      []string
	}{
		{"the granted payment", "k-1", nil},
		{"another amount than granted", "k-2", []string{"CAPABILITY_MISMATCH", "AMOUNT_MISMATCH"}},
		{"no payment", "k-3", []string{"NOT_EXACTLY_ONE_EFFECT", "CAPABILITY_MISMATCH", "CLAIM_MISMATCH", "PAYEE_MISMATCH",
			"CURRENCY_MISMATCH", "AMOUNT_MISMATCH", "REASON_MISMATCH", "DESTINATION_MISMATCH"}},
	}
	for _, tt := range tests {
		found := selectRows(t, ledger, rb.SQL.Table, rb.SQL.KeyColumn, tt.key, rb.SQL.Columns)
		// The granted call is always 17.40 under capability cap-k-1.
		got := failed(t, rb, expr.Vars{"rows": found, "args": toolcall.Native(args(1740)), "call": call, "effect": effect("k-1")})
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: failed checks (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestSupportdeskOnItsServer(t *testing.T) {
	ctx := context.Background()
	st, err := desk.Open(ctx, filepath.Join(t.TempDir(), "desk.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Seed(ctx, desk.DemoData()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(desk.Handler(desk.NewServer(st, zap.NewNop())))
	defer ts.Close()
	d := load(t, examples.Supportdesk, desk.DemoTicket, map[string]string{examples.SupportdeskURL: ts.URL, examples.Data: t.TempDir()})
	sess, err := mcpconn.Dial(ctx, mcpconn.Config{URL: ts.URL}, "examples-test")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	callTool := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		raw, err := sess.Call(ctx, tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		v, err := toolcall.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		return toolcall.Native(v).(map[string]any)
	}
	// read is what a source releases of a record: its declared columns.
	read := func(source, key string) (map[string]any, any) {
		t.Helper()
		s := d.evidence.Sources[source].MCP
		result := callTool(s.Tool, map[string]any{s.KeyArgument: key})
		record := map[string]any{}
		for _, c := range s.Columns {
			v, ok := result[c]
			if !ok {
				t.Fatalf("%s %s: declared column %q is not in the result %v", source, key, c, result)
			}
			record[c] = v
		}
		return record, value(t, recordEnv, s.StateVersion, expr.Vars{"record": record})
	}

	ticket, v := read("tickets", desk.DemoTicket)
	if v != "ticket-v3" || ticket["customer_id"] != d.contract.GetBinding().GetSubject() {
		t.Errorf("tickets T-501 = %v at %v, want cust-42's ticket at ticket-v3", ticket, v)
	}
	// The action adapter's state check reads the same version.
	check := d.action.StateChecks["tickets"].MCP
	if got := value(t, recordEnv, check.StateVersion, expr.Vars{"record": callTool(check.Tool, map[string]any{check.KeyArgument: desk.DemoTicket})}); got != "ticket-v3" {
		t.Errorf("state check of T-501 = %v, want ticket-v3", got)
	}
	msg, _ := read("messages", desk.DemoMessage)
	if msg["body"] != desk.DemoInjection || msg["ticket_id"] != desk.DemoTicket {
		t.Errorf("messages M-901 = %v", msg)
	}
	if got := derived(t, d, "messages", "asks_for_refund", msg); got != true {
		t.Errorf("asks_for_refund(M-901) = %v, want true", got)
	}
	other, _ := read("messages", desk.DemoOtherMessage)
	if got := derived(t, d, "messages", "asks_for_refund", other); got != false {
		t.Errorf("asks_for_refund(M-902) = %v, want false", got)
	}

	// Each tool, in the order a task would call them: the executor's call,
	// its record_ref, a retry, and the readback's checks.
	steps := []struct {
		tool, destination string
		args              map[string]any
	}{
		{"reply_to_customer", "customer", map[string]any{"ticket_id": "T-501", "customer_id": "cust-42", "body": "Sorry about the screen: a credit is on its way."}},
		{"issue_credit", "customer", map[string]any{"ticket_id": "T-501", "customer_id": "cust-42", "amount": map[string]any{"currency_code": "GBP", "minor_units": int64(1500)}}},
		{"close_ticket", "own_ticket", map[string]any{"ticket_id": "T-501"}},
	}
	for i, s := range steps {
		key := "key-" + s.tool
		call := map[string]any{"tool": s.tool, "destination": s.destination, "record": "tickets/T-501", "state_version": fmt.Sprintf("ticket-v%d", desk.DemoTicketVersion+i)}
		effect := map[string]any{"id": "eff-" + s.tool, "idempotency_key": key, "capability_id": "cap-" + s.tool, "task_id": "task-1"}
		mapping := expr.Vars{"args": s.args, "call": call, "effect": effect}
		ex := d.action.Executors[s.tool].MCP
		execute := func() any {
			args := map[string]any{}
			for name, src := range ex.Arguments {
				args[name] = evalAny(t, src, mapping)
			}
			result := callTool(ex.Tool, args)
			return value(t, resultEnv, ex.RecordRef, expr.Vars{"result": result})
		}
		ref := execute()
		if again := execute(); again != ref {
			t.Errorf("%s: a retry names %v, the first call %v", s.tool, again, ref)
		}
		rb := d.verifier.Readbacks[s.tool]
		verify := func(effect map[string]any) []string {
			args := map[string]any{}
			for name, src := range rb.MCP.Arguments {
				args[name] = evalAny(t, src, expr.Vars{"args": s.args, "call": call, "effect": effect})
			}
			result := callTool(rb.MCP.Tool, args)
			rows := []any{result}
			if rb.MCP.Rows != "" {
				rows = evalAny(t, rb.MCP.Rows, expr.Vars{"result": result}).([]any)
			}
			withRef := maps.Clone(effect)
			withRef["record_ref"] = ref
			return failed(t, rb, expr.Vars{"rows": rows, "result": result, "args": s.args, "call": call, "effect": withRef})
		}
		if got := verify(effect); len(got) > 0 {
			t.Errorf("%s: readback checks failed: %v", s.tool, got)
		}
		// Under a key nothing was written with, the readback fails.
		stranger := maps.Clone(effect)
		stranger["idempotency_key"] = "never-used"
		if got := verify(stranger); len(got) == 0 {
			t.Errorf("%s: the readback passed for a key nothing was written under", s.tool)
		}
	}
	final, v := read("tickets", desk.DemoTicket)
	if final["status"] != "closed" || final["credit_total_minor"] != int64(1500) || v != "ticket-v6" {
		t.Errorf("T-501 after the task = %v at %v, want closed with GBP 15.00 credited at ticket-v6", final, v)
	}
	raw, _ := json.Marshal(final)
	if strings.Contains(string(raw), "closed_by") {
		t.Errorf("the tickets source releases closed_by, which it does not declare: %s", raw)
	}
}
