package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/transparency-dev/merkle/compact"
)

// Table creates the journal's table. Rows are never updated or deleted by
// Ambit. Each row keeps, beside the entry, its leaf hash and the hashes of
// the perfect subtrees it completes (smallest first), so that any
// subtree's hash is one read away: subtree (level l, index i) is stored by
// entry (i+1)<<l at offset 32*l.
const Table = `CREATE TABLE IF NOT EXISTS journal (
		seq         INTEGER PRIMARY KEY,
		recorded_at TEXT    NOT NULL,
		kind        TEXT    NOT NULL,
		ref         TEXT    NOT NULL,
		body        BLOB    NOT NULL,
		hashes      BLOB    NOT NULL
	)`

// Schema creates the journal's table and its first indexes, as schema
// version 1 did; later versions replaced the indexes (KindIndex,
// RefIndex).
var Schema = []string{
	Table,
	`CREATE INDEX IF NOT EXISTS journal_kind ON journal (kind, seq)`,
	// A receipt is exported by its identifier.
	`CREATE INDEX IF NOT EXISTS journal_ref ON journal (ref)`,
}

// ReplayedKind is the one kind of entry read back by kind: the authority
// ledger's transitions, replayed at start. Only it is indexed by kind, so
// the entries every decision, receipt and redemption writes update one
// index fewer.
const ReplayedKind = "canon"

// KindIndex replaces the index of every entry by kind with one of the
// replayed kind's entries alone (schema version 3).
var KindIndex = []string{
	`DROP INDEX IF EXISTS journal_kind`,
	`CREATE INDEX IF NOT EXISTS journal_replayed ON journal (seq) WHERE kind = '` + ReplayedKind + `'`,
}

// RefIndex replaces the index of entries by ref with one by the ref's
// tail of lowercase hexadecimal digits (schema version 8). The
// identifiers Ambit issues (cap-, dec-, ev-, eff-, rb- and the rest) end
// in hex digits that begin with the millisecond they were made, so by
// their tails the refs a commit adds are appended at the index's end, one
// page for all of them, where by the whole ref each kind's were added at
// the end of its prefix's range, inside the index: a page a kind, and
// often a split of one with its neighbours. A ref is then found by its
// tail, and the rows that share it are told apart by the whole ref.
var RefIndex = []string{
	`DROP INDEX IF EXISTS journal_ref`,
	`CREATE INDEX IF NOT EXISTS journal_ref_tail ON journal ((` + refTail + `))`,
}

// refTail is the SQL of a ref's tail: what is left after its last
// character that is not a lowercase hex digit. SQLite and PostgreSQL
// spell it alike; RefTail computes the same in Go.
const refTail = `substr(ref, length(rtrim(ref, '` + hexDigits + `')) + 1)`

const hexDigits = "0123456789abcdef"

// RefTail is ref's tail, as the index of refs keys it.
func RefTail(ref string) string { return ref[len(strings.TrimRight(ref, hexDigits)):] }

// ErrChain marks a database whose journal is the hash chain of an older
// kernel.
var ErrChain = errors.New("the journal is a hash chain written by an older kernel; start on a new database")

// Migrate creates the journal's table and indexes in db, as they now are,
// and refuses a journal of the older format (see [CheckFormat]): for a
// database that holds a journal alone. The kernel's store runs the same
// statements through its versioned migrations instead.
func Migrate(ctx context.Context, db Execer) error {
	if err := CheckFormat(ctx, db); err != nil {
		return err
	}
	// The table, then the indexes as later versions replaced Schema's.
	for _, stmt := range slices.Concat([]string{Table}, KindIndex, RefIndex) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("journal schema: %w", err)
		}
	}
	return nil
}

// CheckFormat refuses a journal of the older format, a hash chain, which
// the Merkle tree cannot extend; a database without a journal passes.
func CheckFormat(ctx context.Context, db Execer) error {
	var old int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('journal') WHERE name = 'prev_hash'`).Scan(&old); err != nil {
		return fmt.Errorf("journal schema: %w", err)
	}
	if old > 0 {
		return ErrChain
	}
	return nil
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
	// Reader reads entries in order, a page at a time.
	Reader interface {
		Entries(ctx context.Context, after int64, limit int) ([]Entry, error)
	}
)

// Execer is what Append needs: a *sql.Tx, so the entry commits with the
// change it records.
type Execer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// RowQuerier reads single rows.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Frontier is the compact range of the whole tree: the roots of its
// perfect subtrees, left to right. It is all an append needs, so a writer
// keeps it in memory and appends cost no read.
type Frontier struct{ rng *compact.Range }

// NewFrontier is the frontier of the empty tree.
func NewFrontier() *Frontier { return &Frontier{rng: ranges.NewEmptyRange(0)} }

// LoadFrontier reads the frontier of the stored tree: the last position,
// then the O(log n) subtree hashes that cover the tree.
func LoadFrontier(ctx context.Context, q RowQuerier) (*Frontier, error) {
	var size int64
	err := q.QueryRowContext(ctx, `SELECT seq FROM journal ORDER BY seq DESC LIMIT 1`).Scan(&size)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return NewFrontier(), nil
	case err != nil:
		return nil, fmt.Errorf("journal head: %w", err)
	}
	ids := compact.RangeNodes(0, uint64(size), nil)
	hashes := make([][]byte, len(ids))
	for i, id := range ids {
		if hashes[i], err = nodeHash(ctx, q, id); err != nil {
			return nil, fmt.Errorf("journal head: %w", err)
		}
	}
	rng, err := ranges.NewRange(0, uint64(size), hashes)
	if err != nil {
		return nil, fmt.Errorf("journal head: %w", err)
	}
	return &Frontier{rng: rng}, nil
}

// Size is the number of entries the frontier covers.
func (f *Frontier) Size() uint64 { return f.rng.End() }

// Head is the tree head: size and root hash.
func (f *Frontier) Head() TreeHead {
	if f.Size() == 0 {
		return TreeHead{Root: EmptyRoot()}
	}
	root, _ := f.rng.GetRootHash(nil) // a range from 0 always has a root
	return TreeHead{Size: f.Size(), Root: root}
}

// Clone copies the frontier, e.g. to restore it when a transaction that
// appended rolls back.
func (f *Frontier) Clone() *Frontier {
	// The hashes themselves are never modified, only replaced.
	rng, _ := ranges.NewRange(0, f.Size(), slices.Clone(f.rng.Hashes()))
	return &Frontier{rng: rng}
}

// Append adds an entry after the stored head, reading the frontier first;
// a writer that keeps its frontier uses [Insert].
func Append(ctx context.Context, tx Execer, at time.Time, kind, ref string, body []byte) (Entry, error) {
	f, err := LoadFrontier(ctx, tx)
	if err != nil {
		return Entry{}, err
	}
	return Insert(ctx, tx, f, at, kind, ref, body)
}

// Insert stores an entry at position f.Size()+1 with the hashes of the
// subtrees it completes, and moves f past it; f is unchanged when the
// insert fails. f must be the frontier of the tree tx sees.
func Insert(ctx context.Context, tx Execer, f *Frontier, at time.Time, kind, ref string, body []byte) (Entry, error) {
	next := f.Clone()
	r, err := Next(next, at, kind, ref, body)
	if err != nil {
		return Entry{}, err
	}
	if err := InsertRows(ctx, tx, []Row{r}); err != nil {
		return Entry{}, err
	}
	*f = *next
	return r.Entry, nil
}

// Row is an entry ready to be stored: with the hashes of the subtrees it
// completes, smallest first (what the row keeps).
type Row struct {
	Entry
	hashes []byte
}

// Next makes the entry at position f.Size()+1 and moves f past it, without
// storing it: InsertRows stores it, in order, in the transaction whose tree
// f is.
func Next(f *Frontier, at time.Time, kind, ref string, body []byte) (Row, error) {
	if body == nil {
		body = []byte{}
	}
	size := f.Size()
	e := Entry{Seq: int64(size) + 1, At: at.UTC(), Kind: kind, Ref: ref, Body: body}
	e.LeafHash = LeafHash(&e)
	// The visitor sees the leaf, then each subtree the leaf completes,
	// smallest first.
	hashes := make([]byte, 0, hashSize*(2+bits.TrailingZeros64(size+1)))
	if err := f.rng.Append(e.LeafHash, func(_ compact.NodeID, h []byte) { hashes = append(hashes, h...) }); err != nil {
		return Row{}, fmt.Errorf("journal append %s %s: %w", kind, ref, err)
	}
	return Row{Entry: e, hashes: hashes}, nil
}

// rowsPerInsert bounds the rows one statement stores.
const rowsPerInsert = 64

// InsertRows stores rows made by Next, a statement per rowsPerInsert of
// them: a group commit's entries cost a few statements, not one each.
func InsertRows(ctx context.Context, tx Execer, rows []Row) error {
	for len(rows) > 0 {
		n := min(len(rows), rowsPerInsert)
		q := make([]byte, 0, 80+16*n)
		q = append(q, "INSERT INTO journal (seq, recorded_at, kind, ref, body, hashes) VALUES "...)
		args := make([]any, 0, 6*n)
		for i, r := range rows[:n] {
			if i > 0 {
				q = append(q, ", "...)
			}
			q = append(q, "(?, ?, ?, ?, ?, ?)"...)
			args = append(args, r.Seq, r.At.Format(time.RFC3339Nano), r.Kind, r.Ref, r.Body, r.hashes)
		}
		if _, err := tx.ExecContext(ctx, string(q), args...); err != nil {
			first := rows[0]
			return fmt.Errorf("journal append %s %s (entry %d and %d after it): %w", first.Kind, first.Ref, first.Seq, n-1, err)
		}
		rows = rows[n:]
	}
	return nil
}

// Head reads the stored tree's head: its size and root.
func Head(ctx context.Context, q RowQuerier) (TreeHead, error) {
	f, err := LoadFrontier(ctx, q)
	if err != nil {
		return TreeHead{}, err
	}
	return f.Head(), nil
}

// Querier reads entries.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

const columns = `seq, recorded_at, kind, ref, body, hashes`

// Read returns up to limit entries after position after, in order. A limit
// of 0 or less reads to the end.
func Read(ctx context.Context, q Querier, after int64, limit int) ([]Entry, error) {
	query := `SELECT ` + columns + ` FROM journal WHERE seq > ? ORDER BY seq`
	args := []any{after}
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	return read(ctx, q, query, args...)
}

// ReadKindAfter returns up to limit entries of one kind after position
// after, in order (limit <= 0: all): the ledger's transitions since a
// snapshot, a page at a time.
func ReadKindAfter(ctx context.Context, q Querier, kind string, after int64, limit int) ([]Entry, error) {
	query, args := kindQuery(kind, after, limit)
	return read(ctx, q, query, args...)
}

// kindQuery selects the entries of kind after position after, up to limit
// (limit <= 0: all). The replayed kind is written as a literal, as the
// partial index of its entries names it: PostgreSQL's generic plan of a
// prepared statement knows no bound value, so it could not use the index.
func kindQuery(kind string, after int64, limit int) (string, []any) {
	cond, args := "kind = ?", []any{kind}
	if kind == ReplayedKind {
		cond, args = "kind = '"+ReplayedKind+"'", nil
	}
	query := `SELECT ` + columns + ` FROM journal WHERE ` + cond + ` AND seq > ? ORDER BY seq`
	args = append(args, after)
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	return query, args
}

// ReadRef returns the entries with one ref among kinds, in order: the
// entry that recorded a receipt, found by the receipt's identifier.
func ReadRef(ctx context.Context, q Querier, ref string, kinds ...string) ([]Entry, error) {
	return ReadRefs(ctx, q, []string{ref}, kinds...)
}

// refsPerRead bounds the refs one statement of ReadRefs binds.
const refsPerRead = 512

// ReadRefs returns the entries whose ref is one of refs, among kinds: what
// ReadRef returns of each, a statement per refsPerRead refs rather than
// one per ref. A ref's entries are in order.
func ReadRefs(ctx context.Context, q Querier, refs []string, kinds ...string) ([]Entry, error) {
	var out []Entry
	for len(refs) > 0 {
		n := min(len(refs), refsPerRead)
		query, args := refsQuery(refs[:n])
		es, err := read(ctx, q, query, args...)
		if err != nil {
			return nil, err
		}
		if len(kinds) > 0 {
			es = slices.DeleteFunc(es, func(e Entry) bool { return !slices.Contains(kinds, e.Kind) })
		}
		out = append(out, es...)
		refs = refs[n:]
	}
	return out, nil
}

// refsQuery selects the entries whose ref is one of refs, in order,
// through the index of ref tails: by tail, then by the whole ref. It
// binds a power of two of refs, the last repeated to make up the number,
// so that the statements a caller prepares are a handful of texts (one
// ref, the common case, is one of them) rather than one per count.
func refsQuery(refs []string) (string, []any) {
	n := 1
	for n < len(refs) {
		n *= 2
	}
	args := make([]any, 2*n)
	for i := range n {
		r := refs[min(i, len(refs)-1)]
		args[i], args[n+i] = RefTail(r), r
	}
	ph := sqldb.Placeholders(n)
	return `SELECT ` + columns + ` FROM journal WHERE ` + refTail + ` IN (` + ph + `) AND ref IN (` + ph + `) ORDER BY seq`, args
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
		var hashes []byte
		if err := rows.Scan(&e.Seq, &at, &e.Kind, &e.Ref, &e.Body, &hashes); err != nil {
			return nil, fmt.Errorf("journal read: %w", err)
		}
		// A malformed time is tampering too; keep the row so Verify names
		// it.
		e.At, _ = time.Parse(time.RFC3339Nano, at)
		if len(hashes) >= hashSize {
			e.LeafHash = hashes[:hashSize]
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
