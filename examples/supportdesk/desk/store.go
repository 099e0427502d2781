package desk

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// Errors of a [Store], matched with errors.Is. Their messages are safe to
// return to a caller.
var (
	// ErrInvalid means a request is malformed.
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound means no row has the id or key.
	ErrNotFound = errors.New("not found")
	// ErrClosed means the ticket is closed: nothing more is written to it.
	ErrClosed = errors.New("ticket is closed")
	// ErrKeyReused means the idempotency key already names a write with
	// other arguments; nothing was written.
	ErrKeyReused = errors.New("idempotency key already used with other arguments")
)

// Bounds of a request.
const (
	maxID        = 64
	maxKey       = 256
	maxBody      = 16 << 10
	maxCreditMin = 100_000_000 // minor units of one credit
)

const schema = `
CREATE TABLE IF NOT EXISTS tickets (
	ticket_id          TEXT PRIMARY KEY,
	customer_id        TEXT NOT NULL,
	subject            TEXT NOT NULL,
	status             TEXT NOT NULL CHECK (status IN ('open', 'closed')),
	priority           TEXT NOT NULL,
	credit_total_minor INTEGER NOT NULL DEFAULT 0,
	version            INTEGER NOT NULL,
	closed_by          TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS messages (
	message_id  TEXT PRIMARY KEY,
	ticket_id   TEXT NOT NULL,
	customer_id TEXT NOT NULL,
	body        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS replies (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	idempotency_key TEXT NOT NULL UNIQUE,
	ticket_id       TEXT NOT NULL,
	customer_id     TEXT NOT NULL,
	body            TEXT NOT NULL,
	ticket_version  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS credits (
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	idempotency_key TEXT NOT NULL UNIQUE,
	ticket_id       TEXT NOT NULL,
	customer_id     TEXT NOT NULL,
	currency_code   TEXT NOT NULL,
	minor_units     INTEGER NOT NULL CHECK (minor_units > 0),
	ticket_version  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS closures (
	idempotency_key TEXT PRIMARY KEY,
	ticket_id       TEXT NOT NULL UNIQUE,
	ticket_version  INTEGER NOT NULL
);`

// Store is the desk's database. It is safe for concurrent use: each write
// is one transaction that takes the write lock when it begins (see package
// sqldb), so a check of an idempotency key and the write it guards cannot
// interleave with another write.
type Store struct {
	db *sql.DB
}

// Open opens the database named by dsn (see package sqldb), creating the
// file and its tables if needed.
func Open(ctx context.Context, dsn string) (*Store, error) {
	db, err := sqldb.Open(dsn)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("create desk tables: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Seed inserts data in one transaction. Rows whose id already exists are
// left as they are, so seeding twice never undoes a write.
func (s *Store) Seed(ctx context.Context, data Data) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, t := range data.Tickets {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tickets (ticket_id, customer_id, subject, status, priority,
				credit_total_minor, version, closed_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ticket_id) DO NOTHING`,
				t.TicketID, t.CustomerID, t.Subject, t.Status, t.Priority, t.CreditTotalMinor, t.Version, t.ClosedBy); err != nil {
				return fmt.Errorf("seed ticket %s: %w", t.TicketID, err)
			}
		}
		for _, m := range data.Messages {
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (message_id, ticket_id, customer_id, body)
				VALUES (?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`,
				m.MessageID, m.TicketID, m.CustomerID, m.Body); err != nil {
				return fmt.Errorf("seed message %s: %w", m.MessageID, err)
			}
		}
		return nil
	})
}

// write runs fn in one transaction and commits when it returns nil.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Ticket returns the ticket with id.
func (s *Store) Ticket(ctx context.Context, id string) (Ticket, error) {
	if err := checkText("ticket_id", id, maxID); err != nil {
		return Ticket{}, err
	}
	return ticket(ctx, s.db, id)
}

func ticket(ctx context.Context, q querier, id string) (Ticket, error) {
	var t Ticket
	err := q.QueryRowContext(ctx, `SELECT ticket_id, customer_id, subject, status, priority, credit_total_minor,
		version, closed_by FROM tickets WHERE ticket_id = ?`, id).
		Scan(&t.TicketID, &t.CustomerID, &t.Subject, &t.Status, &t.Priority, &t.CreditTotalMinor, &t.Version, &t.ClosedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return Ticket{}, fmt.Errorf("ticket %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("read ticket %q: %w", id, err)
	}
	return t, nil
}

// openTicket returns the ticket with id, refusing a closed one.
func openTicket(ctx context.Context, tx *sql.Tx, id string) (Ticket, error) {
	t, err := ticket(ctx, tx, id)
	if err != nil {
		return Ticket{}, err
	}
	if t.Status == StatusClosed {
		return Ticket{}, fmt.Errorf("ticket %q: %w", id, ErrClosed)
	}
	return t, nil
}

// bump increments a ticket's version and returns the new one: every write
// to a ticket moves its state version.
func bump(ctx context.Context, tx *sql.Tx, id string) (int64, error) {
	var v int64
	if err := tx.QueryRowContext(ctx, `UPDATE tickets SET version = version + 1 WHERE ticket_id = ? RETURNING version`, id).Scan(&v); err != nil {
		return 0, fmt.Errorf("bump version of ticket %q: %w", id, err)
	}
	return v, nil
}

// Message returns the customer message with id, its body verbatim.
func (s *Store) Message(ctx context.Context, id string) (Message, error) {
	if err := checkText("message_id", id, maxID); err != nil {
		return Message{}, err
	}
	var m Message
	err := s.db.QueryRowContext(ctx, `SELECT message_id, ticket_id, customer_id, body FROM messages WHERE message_id = ?`, id).
		Scan(&m.MessageID, &m.TicketID, &m.CustomerID, &m.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("message %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("read message %q: %w", id, err)
	}
	return m, nil
}

// ReplyRequest asks to send a reply to a customer on a ticket.
type ReplyRequest struct {
	TicketID       string `json:"ticket_id" jsonschema:"the ticket replied on, e.g. T-501"`
	CustomerID     string `json:"customer_id" jsonschema:"the customer the reply is sent to"`
	Body           string `json:"body" jsonschema:"the reply's text"`
	IdempotencyKey string `json:"idempotency_key" jsonschema:"names this reply: a retry with the same key sends nothing more"`
}

// Reply sends a reply once per idempotency key.
func (s *Store) Reply(ctx context.Context, r ReplyRequest) (Reply, error) {
	if err := firstErr(checkText("ticket_id", r.TicketID, maxID), checkText("customer_id", r.CustomerID, maxID),
		checkText("body", r.Body, maxBody), checkText("idempotency_key", r.IdempotencyKey, maxKey)); err != nil {
		return Reply{}, err
	}
	var out Reply
	err := s.write(ctx, func(tx *sql.Tx) error {
		prior, err := replies(ctx, tx, r.IdempotencyKey)
		if err != nil {
			return err
		}
		if len(prior) > 0 {
			p := prior[0]
			if p.TicketID != r.TicketID || p.CustomerID != r.CustomerID || p.Body != r.Body {
				return fmt.Errorf("reply %q: %w", r.IdempotencyKey, ErrKeyReused)
			}
			out = p
			return nil
		}
		if _, err := openTicket(ctx, tx, r.TicketID); err != nil {
			return err
		}
		v, err := bump(ctx, tx, r.TicketID)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO replies (idempotency_key, ticket_id, customer_id, body, ticket_version)
			VALUES (?, ?, ?, ?, ?) RETURNING seq`, r.IdempotencyKey, r.TicketID, r.CustomerID, r.Body, v).Scan(&seq); err != nil {
			return fmt.Errorf("insert reply: %w", err)
		}
		out = Reply{ReplyID: replyID(seq), TicketID: r.TicketID, CustomerID: r.CustomerID, Body: r.Body,
			IdempotencyKey: r.IdempotencyKey, TicketVersion: v}
		return nil
	})
	return out, err
}

// RepliesByKey returns the replies written under an idempotency key: none
// or one.
func (s *Store) RepliesByKey(ctx context.Context, key string) ([]Reply, error) {
	if err := checkText("idempotency_key", key, maxKey); err != nil {
		return nil, err
	}
	return replies(ctx, s.db, key)
}

func replies(ctx context.Context, q querier, key string) ([]Reply, error) {
	var r Reply
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT seq, ticket_id, customer_id, body, idempotency_key, ticket_version
		FROM replies WHERE idempotency_key = ?`, key).
		Scan(&seq, &r.TicketID, &r.CustomerID, &r.Body, &r.IdempotencyKey, &r.TicketVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return []Reply{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read reply %q: %w", key, err)
	}
	r.ReplyID = replyID(seq)
	return []Reply{r}, nil
}

func replyID(seq int64) string { return fmt.Sprintf("reply-%d", seq) }

// CreditRequest asks to credit a customer on a ticket.
type CreditRequest struct {
	TicketID       string `json:"ticket_id" jsonschema:"the ticket the credit is for, e.g. T-501"`
	CustomerID     string `json:"customer_id" jsonschema:"the customer credited"`
	Amount         Money  `json:"amount" jsonschema:"the credit, in the desk's currency (GBP)"`
	IdempotencyKey string `json:"idempotency_key" jsonschema:"names this credit: a retry with the same key credits nothing more"`
}

// IssueCredit credits a customer once per idempotency key and adds the
// amount to the ticket's credit total.
func (s *Store) IssueCredit(ctx context.Context, r CreditRequest) (Credit, error) {
	err := firstErr(checkText("ticket_id", r.TicketID, maxID), checkText("customer_id", r.CustomerID, maxID),
		checkText("idempotency_key", r.IdempotencyKey, maxKey))
	switch {
	case err != nil:
		return Credit{}, err
	case r.Amount.CurrencyCode != Currency:
		return Credit{}, fmt.Errorf("%w: amount.currency_code: %q, the desk credits in %s", ErrInvalid, r.Amount.CurrencyCode, Currency)
	case r.Amount.MinorUnits <= 0 || r.Amount.MinorUnits > maxCreditMin:
		return Credit{}, fmt.Errorf("%w: amount.minor_units: %d, want 1 to %d", ErrInvalid, r.Amount.MinorUnits, maxCreditMin)
	}
	var out Credit
	err = s.write(ctx, func(tx *sql.Tx) error {
		prior, err := credits(ctx, tx, r.IdempotencyKey)
		if err != nil {
			return err
		}
		if len(prior) > 0 {
			p := prior[0]
			if p.TicketID != r.TicketID || p.CustomerID != r.CustomerID || p.Amount != r.Amount {
				return fmt.Errorf("credit %q: %w", r.IdempotencyKey, ErrKeyReused)
			}
			out = p
			return nil
		}
		if _, err := openTicket(ctx, tx, r.TicketID); err != nil {
			return err
		}
		v, err := bump(ctx, tx, r.TicketID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tickets SET credit_total_minor = credit_total_minor + ? WHERE ticket_id = ?`,
			r.Amount.MinorUnits, r.TicketID); err != nil {
			return fmt.Errorf("add credit to ticket %q: %w", r.TicketID, err)
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO credits (idempotency_key, ticket_id, customer_id, currency_code,
			minor_units, ticket_version) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq`,
			r.IdempotencyKey, r.TicketID, r.CustomerID, r.Amount.CurrencyCode, r.Amount.MinorUnits, v).Scan(&seq); err != nil {
			return fmt.Errorf("insert credit: %w", err)
		}
		out = Credit{CreditID: creditID(seq), TicketID: r.TicketID, CustomerID: r.CustomerID, Amount: r.Amount,
			IdempotencyKey: r.IdempotencyKey, TicketVersion: v}
		return nil
	})
	return out, err
}

// CreditsByKey returns the credits issued under an idempotency key: none
// or one.
func (s *Store) CreditsByKey(ctx context.Context, key string) ([]Credit, error) {
	if err := checkText("idempotency_key", key, maxKey); err != nil {
		return nil, err
	}
	return credits(ctx, s.db, key)
}

func credits(ctx context.Context, q querier, key string) ([]Credit, error) {
	var c Credit
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT seq, ticket_id, customer_id, currency_code, minor_units, idempotency_key,
		ticket_version FROM credits WHERE idempotency_key = ?`, key).
		Scan(&seq, &c.TicketID, &c.CustomerID, &c.Amount.CurrencyCode, &c.Amount.MinorUnits, &c.IdempotencyKey, &c.TicketVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return []Credit{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read credit %q: %w", key, err)
	}
	c.CreditID = creditID(seq)
	return []Credit{c}, nil
}

func creditID(seq int64) string { return fmt.Sprintf("credit-%d", seq) }

// CloseRequest asks to close a ticket.
type CloseRequest struct {
	TicketID       string `json:"ticket_id" jsonschema:"the ticket to close, e.g. T-501"`
	IdempotencyKey string `json:"idempotency_key" jsonschema:"names this closing: a retry with the same key changes nothing more"`
}

// CloseTicket closes a ticket once per idempotency key. A ticket is closed
// once: closing it again under another key is [ErrClosed].
func (s *Store) CloseTicket(ctx context.Context, r CloseRequest) (Closure, error) {
	if err := firstErr(checkText("ticket_id", r.TicketID, maxID), checkText("idempotency_key", r.IdempotencyKey, maxKey)); err != nil {
		return Closure{}, err
	}
	var out Closure
	err := s.write(ctx, func(tx *sql.Tx) error {
		var ticketID string
		var v int64
		err := tx.QueryRowContext(ctx, `SELECT ticket_id, ticket_version FROM closures WHERE idempotency_key = ?`, r.IdempotencyKey).Scan(&ticketID, &v)
		switch {
		case err == nil && ticketID != r.TicketID:
			return fmt.Errorf("close %q: %w", r.IdempotencyKey, ErrKeyReused)
		case err == nil:
			out = Closure{TicketID: ticketID, Status: StatusClosed, IdempotencyKey: r.IdempotencyKey, TicketVersion: v}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read closure %q: %w", r.IdempotencyKey, err)
		}
		if _, err := openTicket(ctx, tx, r.TicketID); err != nil {
			return err
		}
		if v, err = bump(ctx, tx, r.TicketID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tickets SET status = 'closed', closed_by = ? WHERE ticket_id = ?`,
			r.IdempotencyKey, r.TicketID); err != nil {
			return fmt.Errorf("close ticket %q: %w", r.TicketID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO closures (idempotency_key, ticket_id, ticket_version) VALUES (?, ?, ?)`,
			r.IdempotencyKey, r.TicketID, v); err != nil {
			return fmt.Errorf("insert closure: %w", err)
		}
		out = Closure{TicketID: r.TicketID, Status: StatusClosed, IdempotencyKey: r.IdempotencyKey, TicketVersion: v}
		return nil
	})
	return out, err
}

// checkText refuses an empty, oversized or non-UTF-8 value.
func checkText(name, v string, limit int) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: %s is required", ErrInvalid, name)
	case len(v) > limit:
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalid, name, limit)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not UTF-8", ErrInvalid, name)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
