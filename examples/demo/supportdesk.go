package demo

import (
	"context"
	"encoding/json"
	"strings"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/mcpconn"
)

// The supportdesk example's data, as its server seeds it.
const (
	DeskPurpose   = "customer-support"
	Customer      = "cust-42"
	OtherCustomer = "cust-99"
	Ticket501     = "T-501" // cust-42's, at ticket-v3
	Ticket777     = "T-777" // cust-99's
	Message901    = "M-901" // cust-42's, carrying an injection
	Message902    = "M-902" // cust-99's
	// DeskURL is the placeholder the desk's endpoint fills.
	DeskURL = "SUPPORTDESK_URL"
)

// TicketFields are the fields a support task may read of a ticket.
var TicketFields = []string{"ticket_id", "customer_id", "subject", "status", "priority", "credit_total_minor"}

// Credit is the arguments of an issue_credit call.
func Credit(ticket, customer string, minor int64) map[string]any {
	return map[string]any{"ticket_id": ticket, "customer_id": customer, "amount": client.Money("GBP", minor)}
}

// Reply is the arguments of a reply_to_customer call.
func Reply(ticket, customer, body string) map[string]any {
	return map[string]any{"ticket_id": ticket, "customer_id": customer, "body": body}
}

// Ticket is a ticket as the desk's get_ticket tool answers it.
type Ticket struct {
	TicketID         string `json:"ticket_id"`
	CustomerID       string `json:"customer_id"`
	Status           string `json:"status"`
	CreditTotalMinor int64  `json:"credit_total_minor"`
	Version          int64  `json:"version"`
	ClosedBy         string `json:"closed_by"`
}

// Desk reads the support desk's state through its own read tools, as
// anyone auditing it would, not through Ambit.
type Desk struct{ s *mcpconn.Session }

// OpenDesk connects to the desk's MCP endpoint.
func OpenDesk(ctx context.Context, url string) (*Desk, error) {
	s, err := mcpconn.Dial(ctx, mcpconn.Config{URL: url}, "ambit-e2e-auditor")
	if err != nil {
		return nil, err
	}
	return &Desk{s: s}, nil
}

// Close ends the session.
func (d *Desk) Close() error { return d.s.Close() }

// Ticket reads a ticket.
func (d *Desk) Ticket(ctx context.Context, id string) (Ticket, error) {
	var t Ticket
	raw, err := d.s.Call(ctx, "get_ticket", map[string]any{"ticket_id": id})
	if err == nil {
		err = json.Unmarshal(raw, &t)
	}
	return t, err
}

// Written counts what the desk wrote under an idempotency key: replies
// (get_reply) or credits (get_credit).
func (d *Desk) Written(ctx context.Context, tool, key string) (int, error) {
	raw, err := d.s.Call(ctx, tool, map[string]any{"idempotency_key": key})
	if err != nil {
		return 0, err
	}
	var out map[string][]json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, err
	}
	n := 0
	for _, rows := range out {
		n += len(rows)
	}
	return n, nil
}

// RunSupportdesk tells the support-desk story through the real desk
// server: (g) the agent reads the ticket and the customer's message, which
// carries instructions, as a derived value and quarantined text; (h) a
// reply to the ticket's customer is allowed, executed once and verified;
// (i) what the message asks for — a credit to cust-99, closing T-777 — is
// refused and never reaches the desk; (j) a GBP 15 credit is allowed;
// (k) a GBP 30 credit needs review and is approved; (l) a GBP 20 credit
// would pass the task's cap and is denied; (m) closing the ticket is
// irreversible: it needs an approval and fresh evidence. The desk's own
// read tools then show exactly the allowed effects.
func (s *Story) RunSupportdesk(ctx context.Context) error {
	e, err := s.example(Supportdesk)
	if err != nil {
		return err
	}
	desk, err := OpenDesk(ctx, s.Stack.Info.Examples[Supportdesk][DeskURL])
	if err != nil {
		return err
	}
	defer desk.Close()
	s.printf("\n== the support desk: an agent works cust-42's ticket T-501 through the desk's MCP server (%s)\n", e.Path(e.Files.Contract))
	if err := s.bind(ctx, e, [][2]string{{"desk-task", Ticket501}}); err != nil {
		return err
	}
	d := &deskStory{Story: s, desk: desk}
	s.steps(ctx, []step{
		{"(g) the ticket is trusted; the customer's message is read only as a derived value and quarantined text", d.look},
		{"(h) a reply to the ticket's customer is allowed, executed once and verified", d.reply},
		{"(i) the message's instructions widen nothing: no credit to cust-99, no closing of T-777", d.injected},
		{"(j) a GBP 15.00 credit is allowed, executed and verified", d.smallCredit},
		{"(k) a GBP 30.00 credit needs review, is approved, executed once and verified", d.approvedCredit},
		{"(l) a GBP 20.00 credit would pass the task's GBP 60.00 cap: denied", d.overCap},
		{"(m) closing the ticket is irreversible: approval and fresh evidence", d.closeTicket},
		{"the desk, through its own read tools", d.audit},
	})
	return s.result()
}

// deskStory is the support-desk story's state.
type deskStory struct {
	*Story
	desk *Desk
	// message is the read of the customer's message, cited beside fresh
	// reads of the ticket; first is the first read of the ticket.
	message, first *client.Evidence
}

const deskTask = "desk-task"

// ticket reads the ticket afresh: every write moves its version, and a
// decision needs evidence of the version it acts on.
func (d *deskStory) ticket(ctx context.Context) (*client.Evidence, error) {
	return d.Story.read(ctx, deskTask, DeskPurpose, "tickets", Ticket501, TicketFields...)
}

func (d *deskStory) proposal(tool string, args map[string]any, ev ...*client.Evidence) client.Proposal {
	return client.Proposal{Task: deskTask, Purpose: DeskPurpose, Tool: tool, Args: args, Evidence: ev}
}

func (d *deskStory) look(ctx context.Context) error {
	t, err := d.ticket(ctx)
	if err != nil {
		return err
	}
	d.expect(t.Receipt.GetProvenance() == contractv1.Provenance_PROVENANCE_TRUSTED && t.Values["customer_id"] == Customer && t.Values["status"] == "open",
		"the ticket (trusted) is cust-42's and open")
	m, err := d.Story.read(ctx, deskTask, DeskPurpose, "messages", Message901, "asks_for_refund", "body")
	if err != nil {
		return err
	}
	d.printf("      the message says (quarantined): %q\n", m.Values["body"])
	d.expect(m.Receipt.GetProvenance() == contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING && m.Values["asks_for_refund"] == true &&
		strings.Join(m.Receipt.GetQuarantined(), ",") == "body" && len(m.Values) == 2,
		"the message is instruction-bearing: asks_for_refund=true, the body quarantined, nothing else")
	_, err = d.Story.read(ctx, deskTask, DeskPurpose, "messages", Message901, "customer_id")
	d.expect(d.refused("read the message's raw customer_id", err, "FIELDS_OUTSIDE_GRANT"), "a raw field of the message is refused")
	_, err = d.Story.read(ctx, deskTask, DeskPurpose, "tickets", Ticket777, TicketFields...)
	d.expect(d.refused("read ticket T-777", err, "RECORD_OUTSIDE_BINDING"), "another customer's ticket is refused")
	_, err = d.Story.read(ctx, deskTask, DeskPurpose, "messages", Message902, "asks_for_refund")
	d.expect(d.refused("read message M-902 of T-777", err, "RECORD_OUTSIDE_TASK"), "another ticket's message is refused")
	d.message, d.first = m, t
	return nil
}

func (d *deskStory) reply(ctx context.Context) error {
	t, err := d.ticket(ctx)
	if err != nil {
		return err
	}
	p := d.proposal("reply_to_customer", Reply(Ticket501, Customer, "Sorry about the cracked screen: we are sending a credit."), t, d.message)
	other := d.proposal("reply_to_customer", Reply(Ticket501, OtherCustomer, "Hello"), t, d.message)
	denied, err := d.propose(ctx, other)
	if err != nil {
		return err
	}
	d.expect(denied.Denied() && has(denied, "DESTINATION_OUTSIDE_GRANT"), "a reply to another customer is denied")
	allowed, err := d.propose(ctx, p)
	if err != nil {
		return err
	}
	if !d.expect(allowed.Allowed(), "ALLOW with a one-time capability") {
		return nil
	}
	eff, err := d.Agent.Execute(ctx, allowed)
	if err != nil {
		return err
	}
	d.printf("      execute capability → effect receipt %s, record %s\n", eff.GetReceipt().GetReceiptId(), eff.GetReceipt().GetRecordRef())
	// The reply lost on its way back: the retry gets the first receipt.
	again, err := d.Agent.Execute(ctx, allowed)
	if err != nil {
		return err
	}
	n, err := d.desk.Written(ctx, "get_reply", allowed.GetIdempotencyKey())
	if err != nil {
		return err
	}
	d.expect(again.GetRepeated() && again.GetReceipt().GetReceiptId() == eff.GetReceipt().GetReceiptId() && n == 1,
		"a retry returns the first receipt; the desk holds %d reply under the key", n)
	rb, err := d.Agent.Verify(ctx, allowed, eff)
	if err != nil {
		return err
	}
	d.expect(rb.GetReceipt().GetStatus() == receiptv1.ReadbackStatus_READBACK_STATUS_VERIFIED, "the verifier read the reply back: VERIFIED")
	_, err = d.Agent.Execute(ctx, allowed)
	d.expect(d.refused("execute once more", err, "CAPABILITY_USED"), "once verified, the capability is spent")
	return nil
}

func (d *deskStory) injected(ctx context.Context) error {
	t, err := d.ticket(ctx)
	if err != nil {
		return err
	}
	for _, p := range []client.Proposal{
		d.proposal("issue_credit", Credit(Ticket501, OtherCustomer, 50000), t, d.message),
		d.proposal("issue_credit", Credit(Ticket501, OtherCustomer, 1000), t, d.message),
		d.proposal("close_ticket", map[string]any{"ticket_id": Ticket777}, t, d.message),
	} {
		dec, err := d.propose(ctx, p)
		if err != nil {
			return err
		}
		d.expect(dec.Denied() && dec.GetCapability() == nil, "denied, no capability")
	}
	other, err := d.desk.Ticket(ctx, Ticket777)
	if err != nil {
		return err
	}
	d.expect(other.Status == "open" && other.Version == 1 && other.CreditTotalMinor == 0, "T-777 is untouched at the desk (open, version %d, credits %d)", other.Version, other.CreditTotalMinor)
	return nil
}

func (d *deskStory) smallCredit(ctx context.Context) error {
	t, err := d.ticket(ctx)
	if err != nil {
		return err
	}
	dec, err := d.propose(ctx, d.proposal("issue_credit", Credit(Ticket501, Customer, 1500), t, d.message))
	if err != nil {
		return err
	}
	_, err = d.allowThenRun(ctx, dec)
	return err
}

func (d *deskStory) approvedCredit(ctx context.Context) error {
	t, err := d.ticket(ctx)
	if err != nil {
		return err
	}
	p := d.proposal("issue_credit", Credit(Ticket501, Customer, 3000), t, d.message)
	dec, err := d.propose(ctx, p)
	if err != nil {
		return err
	}
	if p.ApprovalID, err = d.reviewThenApprove(ctx, dec, "APPROVAL_REQUIRED", "goodwill for a damaged order"); err != nil {
		return err
	}
	if dec, err = d.propose(ctx, p); err != nil {
		return err
	}
	out, err := d.allowThenRun(ctx, dec)
	if err != nil || out == nil {
		return err
	}
	n, err := d.desk.Written(ctx, "get_credit", dec.GetIdempotencyKey())
	if err != nil {
		return err
	}
	d.expect(n == 1, "the desk holds %d credit under the key", n)
	return nil
}

func (d *deskStory) overCap(ctx context.Context) error {
	t, err := d.ticket(ctx)
	if err != nil {
		return err
	}
	dec, err := d.propose(ctx, d.proposal("issue_credit", Credit(Ticket501, Customer, 2000), t, d.message))
	if err != nil {
		return err
	}
	d.expect(dec.Denied() && has(dec, "CUMULATIVE_AMOUNT_EXCEEDS_GRANT"), "denied: GBP 45.00 credited, the cap is GBP 60.00")
	return nil
}

func (d *deskStory) closeTicket(ctx context.Context) error {
	t, err := d.ticket(ctx)
	if err != nil {
		return err
	}
	p := d.proposal("close_ticket", map[string]any{"ticket_id": Ticket501}, t)
	dec, err := d.propose(ctx, p)
	if err != nil {
		return err
	}
	if p.ApprovalID, err = d.reviewThenApprove(ctx, dec, "IRREVERSIBLE_APPROVAL_REQUIRED", "customer confirmed the credit"); err != nil {
		return err
	}
	stale := p
	stale.Evidence = []*client.Evidence{d.first}
	dec, err = d.propose(ctx, stale)
	if err != nil {
		return err
	}
	d.expect(dec.Review() && has(dec, "STATE_VERSION_CHANGED") && dec.GetCapability() == nil,
		"approved, but citing the first read of the ticket (%s): REVIEW, the ticket changed since", d.first.Receipt.GetStateVersion())
	if dec, err = d.propose(ctx, p); err != nil {
		return err
	}
	_, err = d.allowThenRun(ctx, dec)
	return err
}

func (d *deskStory) audit(ctx context.Context) error {
	mine, err := d.desk.Ticket(ctx, Ticket501)
	if err != nil {
		return err
	}
	other, err := d.desk.Ticket(ctx, Ticket777)
	if err != nil {
		return err
	}
	d.printf("      %s: %s, credits GBP %d.%02d, version %d\n", mine.TicketID, mine.Status, mine.CreditTotalMinor/100, mine.CreditTotalMinor%100, mine.Version)
	d.printf("      %s: %s, credits GBP %d.%02d, version %d\n", other.TicketID, other.Status, other.CreditTotalMinor/100, other.CreditTotalMinor%100, other.Version)
	d.expect(mine.Status == "closed" && mine.CreditTotalMinor == 4500, "T-501 is closed with exactly the two allowed credits (GBP 45.00)")
	d.expect(other.Status == "open" && other.CreditTotalMinor == 0 && other.Version == 1, "T-777 was never written")
	return nil
}
