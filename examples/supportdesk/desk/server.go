package desk

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// The names of the desk's tools.
const (
	ToolGetTicket          = "get_ticket"
	ToolGetCustomerMessage = "get_customer_message"
	ToolReplyToCustomer    = "reply_to_customer"
	ToolIssueCredit        = "issue_credit"
	ToolCloseTicket        = "close_ticket"
	ToolGetReply           = "get_reply"
	ToolGetCredit          = "get_credit"
)

// TicketRequest names a ticket.
type TicketRequest struct {
	TicketID string `json:"ticket_id" jsonschema:"the ticket's id, e.g. T-501"`
}

// MessageRequest names a customer message.
type MessageRequest struct {
	MessageID string `json:"message_id" jsonschema:"the message's id, e.g. M-901"`
}

// KeyRequest names a write by its idempotency key.
type KeyRequest struct {
	IdempotencyKey string `json:"idempotency_key" jsonschema:"the idempotency key the write was made with"`
}

// Replies are the replies written under one key.
type Replies struct {
	Replies []Reply `json:"replies"`
}

// Credits are the credits issued under one key.
type Credits struct {
	Credits []Credit `json:"credits"`
}

// NewServer returns an MCP server with the desk's tools over s. An error
// of s's own kinds (invalid, not found, closed, key reused) is the tool's
// error result; any other cause is logged and answered as an internal
// error, so SQL never reaches a client.
func NewServer(s *Store, log *zap.Logger) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "supportdesk", Version: "v1"}, nil)
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	write := func(destructive bool) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &destructive}
	}
	add(srv, log, &mcp.Tool{Name: ToolGetTicket, Annotations: read,
		Description: "Read a ticket: its customer, subject, status, priority, credit total and version."},
		func(ctx context.Context, in TicketRequest) (Ticket, error) { return s.Ticket(ctx, in.TicketID) })
	add(srv, log, &mcp.Tool{Name: ToolGetCustomerMessage, Annotations: read,
		Description: "Read a message a customer wrote on a ticket, verbatim. The body is the customer's own text."},
		func(ctx context.Context, in MessageRequest) (Message, error) { return s.Message(ctx, in.MessageID) })
	add(srv, log, &mcp.Tool{Name: ToolReplyToCustomer, Annotations: write(false),
		Description: "Send a reply to a customer on an open ticket, once per idempotency key."},
		s.Reply)
	add(srv, log, &mcp.Tool{Name: ToolIssueCredit, Annotations: write(false),
		Description: "Credit a customer on an open ticket (GBP), once per idempotency key."},
		s.IssueCredit)
	add(srv, log, &mcp.Tool{Name: ToolCloseTicket, Annotations: write(true),
		Description: "Close a ticket, once per idempotency key. A closed ticket cannot be reopened."},
		s.CloseTicket)
	add(srv, log, &mcp.Tool{Name: ToolGetReply, Annotations: read,
		Description: "Read the replies sent under an idempotency key (none or one)."},
		func(ctx context.Context, in KeyRequest) (Replies, error) {
			r, err := s.RepliesByKey(ctx, in.IdempotencyKey)
			return Replies{Replies: r}, err
		})
	add(srv, log, &mcp.Tool{Name: ToolGetCredit, Annotations: read,
		Description: "Read the credits issued under an idempotency key (none or one)."},
		func(ctx context.Context, in KeyRequest) (Credits, error) {
			c, err := s.CreditsByKey(ctx, in.IdempotencyKey)
			return Credits{Credits: c}, err
		})
	return srv
}

// add registers a tool whose result is its structured output.
func add[In, Out any](srv *mcp.Server, log *zap.Logger, t *mcp.Tool, fn func(context.Context, In) (Out, error)) {
	mcp.AddTool(srv, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		out, err := fn(ctx, in)
		if err != nil {
			var zero Out
			return nil, zero, public(log, t.Name, err)
		}
		return nil, out, nil
	})
}

var errInternal = errors.New("internal error")

// public is the error a client may see.
func public(log *zap.Logger, tool string, err error) error {
	for _, known := range []error{ErrInvalid, ErrNotFound, ErrClosed, ErrKeyReused} {
		if errors.Is(err, known) {
			return err
		}
	}
	log.Error("tool failed", zap.String("tool", tool), zap.Error(err))
	return errInternal
}

// sessionIdle bounds how long an idle HTTP session is kept.
const sessionIdle = 10 * time.Minute

// Handler serves srv as a streamable HTTP MCP endpoint, refusing
// cross-origin browser requests and (the SDK's default) requests for a
// non-loopback host that arrive on a loopback address.
func Handler(srv *mcp.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: sessionIdle})
	return http.NewCrossOriginProtection().Handler(h)
}
