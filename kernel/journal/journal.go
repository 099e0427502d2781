package journal

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Entry is one record of the log.
type Entry struct {
	Seq      int64
	At       time.Time
	Kind     string
	Ref      string
	Body     []byte
	PrevHash string
	Hash     string
}

// Schema creates the journal table. Rows are never updated or deleted by
// Ambit.
const Schema = `CREATE TABLE IF NOT EXISTS journal (
	seq         INTEGER PRIMARY KEY,
	recorded_at TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	ref         TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	prev_hash   TEXT    NOT NULL,
	hash        TEXT    NOT NULL
)`

// HashOf computes an entry's hash from its position, time, kind, ref, body
// and predecessor. Every part is length-prefixed, so no two entries encode
// alike.
func HashOf(e *Entry) string {
	h := sha256.New()
	var n [8]byte
	write := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	binary.BigEndian.PutUint64(n[:], uint64(e.Seq))
	h.Write(n[:])
	write([]byte(e.At.UTC().Format(time.RFC3339Nano)))
	write([]byte(e.Kind))
	write([]byte(e.Ref))
	write(e.Body)
	write([]byte(e.PrevHash))
	return hex.EncodeToString(h.Sum(nil))
}

// Appender and Reader are the log as its users see it: what the authority
// ledger persists through. The SQLite store implements them (its
// transaction appends, the store reads); a PostgreSQL store implements the
// same two interfaces.
type (
	// Appender appends inside the caller's transaction.
	Appender interface {
		Append(at time.Time, kind, ref string, body []byte) (Entry, error)
	}
	// Reader reads entries in order: all of them, or those of one kind.
	Reader interface {
		Entries(ctx context.Context, after int64, limit int) ([]Entry, error)
		EntriesOfKind(ctx context.Context, kind string) ([]Entry, error)
	}
)

// Execer is what Append needs: a *sql.Tx, so the entry commits with the
// change it records.
type Execer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Append adds an entry after the current head and returns it.
func Append(ctx context.Context, tx Execer, at time.Time, kind, ref string, body []byte) (Entry, error) {
	if body == nil {
		body = []byte{}
	}
	e := Entry{At: at.UTC(), Kind: kind, Ref: ref, Body: body}
	err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1`).Scan(&e.Seq, &e.PrevHash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		e.Seq, e.PrevHash = 0, ""
	case err != nil:
		return Entry{}, fmt.Errorf("journal head: %w", err)
	}
	e.Seq++
	e.Hash = HashOf(&e)
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO journal (seq, recorded_at, kind, ref, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.Seq, e.At.Format(time.RFC3339Nano), e.Kind, e.Ref, e.Body, e.PrevHash, e.Hash); err != nil {
		return Entry{}, fmt.Errorf("journal append %s %s: %w", kind, ref, err)
	}
	return e, nil
}

// Head returns the hash of the last entry ("" for an empty log).
func Head(ctx context.Context, q Execer) (string, error) {
	var h string
	err := q.QueryRowContext(ctx, `SELECT hash FROM journal ORDER BY seq DESC LIMIT 1`).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("journal head: %w", err)
	}
	return h, nil
}

// Querier reads entries.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Read returns up to limit entries after position after, in order. A limit
// of 0 or less reads to the end.
func Read(ctx context.Context, q Querier, after int64, limit int) ([]Entry, error) {
	query := `SELECT seq, recorded_at, kind, ref, body, prev_hash, hash FROM journal WHERE seq > ? ORDER BY seq`
	args := []any{after}
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	return read(ctx, q, query, args...)
}

// ReadKind returns every entry of one kind, in order: replaying the
// authority ledger needs its transitions, not every decision besides.
func ReadKind(ctx context.Context, q Querier, kind string) ([]Entry, error) {
	return read(ctx, q, `SELECT seq, recorded_at, kind, ref, body, prev_hash, hash FROM journal WHERE kind = ? ORDER BY seq`, kind)
}

func read(ctx context.Context, q Querier, query string, args ...any) ([]Entry, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("journal read: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var at string
		if err := rows.Scan(&e.Seq, &at, &e.Kind, &e.Ref, &e.Body, &e.PrevHash, &e.Hash); err != nil {
			return nil, fmt.Errorf("journal read: %w", err)
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			// A malformed time is tampering too; keep the row so Verify
			// names it.
			t = time.Time{}
		}
		e.At = t
		out = append(out, e)
	}
	return out, rows.Err()
}

// Report is the outcome of a verification.
type Report struct {
	OK       bool
	Entries  int64
	FirstBad int64 // position of the first bad entry, when not OK
	Problem  string
	Head     string
}

// Verify recomputes the chain over entries in stored order. It names the
// first entry whose position, predecessor link or hash is wrong: an edit
// breaks that entry's hash, a removal or insertion breaks the numbering and
// the next link, a reordering breaks the links.
func Verify(entries []Entry) Report {
	r := Report{OK: true, Entries: int64(len(entries))}
	prev := ""
	for i := range entries {
		e := &entries[i]
		want := int64(i + 1)
		switch {
		case e.Seq != want:
			return bad(r, e.Seq, fmt.Sprintf("entry at position %d has number %d: an entry was removed, inserted or moved", want, e.Seq))
		case e.PrevHash != prev:
			return bad(r, e.Seq, "link to the previous entry is broken: an entry before it was removed, inserted or moved")
		case HashOf(e) != e.Hash:
			return bad(r, e.Seq, fmt.Sprintf("hash does not match its content: the %s entry %q was edited", e.Kind, e.Ref))
		}
		prev = e.Hash
	}
	r.Head = prev
	return r
}

func bad(r Report, seq int64, problem string) Report {
	r.OK, r.FirstBad, r.Problem = false, seq, problem
	return r
}
