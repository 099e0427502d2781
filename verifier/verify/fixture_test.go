package verify_test

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/verifier/readback"
	"github.com/ambitkernel/ambit/verifier/verify"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// kernel is an in-test implementation of verify.Kernel.
type kernel struct {
	mu       sync.Mutex
	recorded []*receiptv1.Envelope
	err      error
}

var _ verify.Kernel = (*kernel)(nil)

func (k *kernel) RecordReadback(_ context.Context, in *kernelv1.RecordReadbackRequest, _ ...grpc.CallOption) (*kernelv1.RecordReadbackResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return nil, k.err
	}
	k.recorded = append(k.recorded, in.GetReceipt())
	return &kernelv1.RecordReadbackResponse{}, nil
}

var readAt = time.Date(2026, 3, 2, 10, 5, 0, 0, time.UTC)

type signers struct {
	kernel, action, verifier       *envelope.Signer
	kernelPub, actionPub, verifPub ed25519.PublicKey
}

func newSigners(t *testing.T) signers {
	t.Helper()
	var s signers
	gen := func(name string) (*envelope.Signer, ed25519.PublicKey) {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		return envelope.NewSigner(name, priv), pub
	}
	s.kernel, s.kernelPub = gen("kernel")
	s.action, s.actionPub = gen("action")
	s.verifier, s.verifPub = gen("verifier")
	return s
}

// The calls of the example tools, arguments in canonical form.
var (
	refundCall = &contractv1.ToolCall{Tool: "refund",
		ArgumentsJson: `{"amount":{"currency_code":"GBP","minor_units":1740},"claim_id":"C-1001","payee_id":"employee-7"}`}
	creditCall = &contractv1.ToolCall{Tool: "issue_credit",
		ArgumentsJson: `{"amount":{"currency_code":"GBP","minor_units":500},"ticket_id":"T-9"}`}
)

// effectOf is the effect receipt the action adapter signs for call, with
// record_ref ref.
func effectOf(call *contractv1.ToolCall, ref string) *receiptv1.EffectReceipt {
	return &receiptv1.EffectReceipt{
		ReceiptId: "eff-1", CapabilityId: "cap-1", TaskId: "task-1", IdempotencyKey: "idem-1",
		Call: call, Destination: "claimant", RecordRef: ref, Issuer: "action",
	}
}

// envelopes signs the capability for call and its effect receipt (ref as
// record_ref), after effectMut edits the receipt.
func (s signers) envelopes(t *testing.T, call *contractv1.ToolCall, ref string, effectMut func(*receiptv1.EffectReceipt)) (capEnv, effEnv *receiptv1.Envelope) {
	t.Helper()
	capEnv, err := s.kernel.Sign(&receiptv1.Capability{
		CapabilityId: "cap-1", TaskId: "task-1", Call: call, Destination: "claimant",
		IdempotencyKey: "idem-1", ExpiresAt: timestamppb.New(readAt.Add(time.Hour)), Holder: "agent",
		StateVersion: "claims-v3", Record: "claims_db/C-1001",
	})
	if err != nil {
		t.Fatal(err)
	}
	eff := effectOf(call, ref)
	if effectMut != nil {
		effectMut(eff)
	}
	effEnv, err = s.action.Sign(eff)
	if err != nil {
		t.Fatal(err)
	}
	return capEnv, effEnv
}

// payment is one row of the executor's target table.
type payment struct {
	id, key, claim, payee string
	minor                 any
}

var paid = payment{"pay-1", "idem-1", "C-1001", "employee-7", 1740}

// writePayments creates the table the refund executor writes, without a
// unique key so that a doubled effect can be written, and rows.
func writePayments(t *testing.T, rows ...payment) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payments.db")
	db, err := sqldb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE payments (
		payment_id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL, claim_id TEXT NOT NULL, payee_id TEXT NOT NULL,
		currency TEXT NOT NULL, amount_minor INTEGER NOT NULL, destination TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, p := range rows {
		if _, err := db.Exec(`INSERT INTO payments VALUES (?, ?, ?, ?, 'GBP', ?, 'claimant')`, p.id, p.key, p.claim, p.payee, p.minor); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// refundReadback is the SQL readback of the example's refund tool.
func refundReadback(database string) readback.Spec {
	return readback.Spec{
		SQL: &readback.SQL{Database: database, Table: "payments", KeyColumn: "idempotency_key",
			Columns: []string{"payment_id", "claim_id", "payee_id", "currency", "amount_minor", "destination"}},
		Checks: []readback.Check{
			{Code: "NOT_EXACTLY_ONE_EFFECT", Expression: "size(rows) == 1"},
			{Code: "CLAIM_MISMATCH", Expression: "rows.all(r, r.claim_id == args.claim_id)"},
			{Code: "PAYEE_MISMATCH", Expression: "rows.all(r, r.payee_id == args.payee_id)"},
			{Code: "AMOUNT_MISMATCH", Expression: "rows[0].currency == args.amount.currency_code && rows[0].amount_minor == args.amount.minor_units"},
			{Code: "AMOUNT_ABOVE_GRANT", Expression: "rows.all(r, r.amount_minor <= args.amount.minor_units)"},
			{Code: "DESTINATION_MISMATCH", Expression: "rows.all(r, r.destination == call.destination)"},
			{Code: "RECORD_REF_MISMATCH", Expression: "rows.all(r, r.payment_id == effect.record_ref)"},
		},
	}
}

// credit is one record of the upstream server's credits.
type credit struct {
	CreditID       string `json:"credit_id"`
	TicketID       string `json:"ticket_id"`
	AmountMinor    int64  `json:"amount_minor"`
	IdempotencyKey string `json:"idempotency_key"`
}

type getCreditIn struct {
	IdempotencyKey string `json:"idempotency_key"`
}

type getCreditOut struct {
	Credits []credit `json:"credits"`
}

// creditServer is a real MCP server on a loopback HTTP listener with a
// read-only tool, get_credit, answering from credits; an empty key is a
// tool error.
func creditServer(t *testing.T, credits ...credit) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_credit"}, func(_ context.Context, _ *mcp.CallToolRequest, in getCreditIn) (*mcp.CallToolResult, getCreditOut, error) {
		if in.IdempotencyKey == "" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "idempotency_key is required"}}}, getCreditOut{}, nil
		}
		out := getCreditOut{Credits: []credit{}}
		for _, c := range credits {
			if c.IdempotencyKey == in.IdempotencyKey {
				out.Credits = append(out.Credits, c)
			}
		}
		return nil, out, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// creditReadback is the MCP readback of the issue_credit tool; key maps
// its argument.
func creditReadback(url, key string) readback.Spec {
	return readback.Spec{
		MCP: &readback.MCP{
			Server: mcpconn.Config{URL: url}, Tool: "get_credit",
			Arguments: map[string]string{"idempotency_key": key},
			Rows:      "result.credits",
		},
		Checks: []readback.Check{
			{Code: "NOT_EXACTLY_ONE_EFFECT", Expression: "size(rows) == 1"},
			{Code: "TICKET_MISMATCH", Expression: "rows.all(r, r.ticket_id == args.ticket_id)"},
			{Code: "AMOUNT_MISMATCH", Expression: "rows.all(r, r.amount_minor == args.amount.minor_units)"},
			{Code: "RECORD_REF_MISMATCH", Expression: "rows.all(r, r.credit_id == effect.record_ref)"},
		},
	}
}

var issued = credit{CreditID: "cr-1", TicketID: "T-9", AmountMinor: 500, IdempotencyKey: "idem-1"}
