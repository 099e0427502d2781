package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
)

// Snapshots of the authority ledger let a kernel start without folding its
// whole journal. The store only keeps their bytes: the kernel writes them
// and checks each against the journal before it uses one. A body is kept
// in chunks, each written in a transaction of its own, so that writing a
// large snapshot never holds the database for long; the header is marked
// complete in the last one, so that a reader never sees half a snapshot.
var snapshotSchema = []string{
	`CREATE TABLE IF NOT EXISTS ledger_snapshots (
		snapshot_id  TEXT PRIMARY KEY,
		journal_size INTEGER NOT NULL,
		root         BLOB    NOT NULL,
		digest       BLOB    NOT NULL,
		chunks       INTEGER NOT NULL,
		taken_at     TEXT    NOT NULL,
		complete     INTEGER NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS ledger_snapshot_chunks (
		snapshot_id TEXT    NOT NULL,
		n           INTEGER NOT NULL,
		body        BLOB    NOT NULL,
		PRIMARY KEY (snapshot_id, n)
	)`,
}

// LedgerSnapshot describes a stored snapshot of the authority ledger.
type LedgerSnapshot struct {
	ID string
	// JournalSize and Root name the journal the snapshot follows: its
	// first JournalSize entries, whose Merkle root is Root.
	JournalSize uint64
	Root        []byte
	// Digest is the SHA-256 of the body, Chunks the number of its rows.
	Digest  []byte
	Chunks  int
	TakenAt time.Time
}

const (
	// snapshotChunk is the size of one row of a body.
	snapshotChunk = 1 << 20
	// keepSnapshots is how many complete snapshots are kept: more than
	// one, so that a kernel reading one while another replica writes the
	// next still finds it.
	keepSnapshots = 3
	// abandoned is how long an incomplete snapshot is left to its writer.
	abandoned = time.Hour
)

// WriteLedgerSnapshot stores body as a snapshot of the ledger taken at the
// journal's first size entries, whose root is root, and drops all but the
// newest few. It runs beside updates, not through them: each chunk commits
// on its own.
func (s *Store) WriteLedgerSnapshot(ctx context.Context, size uint64, root []byte, at time.Time, body io.Reader) (LedgerSnapshot, error) {
	var idb [12]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return LedgerSnapshot{}, fmt.Errorf("ledger snapshot: %w", err)
	}
	snap := LedgerSnapshot{ID: hex.EncodeToString(idb[:]), JournalSize: size, Root: root, TakenAt: at.UTC()}
	if err := s.snapshotTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ledger_snapshots (snapshot_id, journal_size, root, digest, chunks, taken_at, complete)
			VALUES (?, ?, ?, ?, 0, ?, 0)`, snap.ID, int64(size), root, []byte{}, ts(at))
		return err
	}); err != nil {
		return LedgerSnapshot{}, fmt.Errorf("ledger snapshot at %d: %w", size, err)
	}
	err := s.writeChunks(ctx, &snap, body)
	if err == nil {
		err = s.snapshotTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE ledger_snapshots SET digest = ?, chunks = ?, complete = 1 WHERE snapshot_id = ?`,
				snap.Digest, snap.Chunks, snap.ID)
			return err
		})
	}
	if err != nil {
		_ = s.dropSnapshots(context.WithoutCancel(ctx), []string{snap.ID})
		return LedgerSnapshot{}, fmt.Errorf("ledger snapshot at %d: %w", size, err)
	}
	if err := s.pruneSnapshots(ctx, at); err != nil {
		return snap, fmt.Errorf("ledger snapshot at %d: %w", size, err)
	}
	return snap, nil
}

func (s *Store) writeChunks(ctx context.Context, snap *LedgerSnapshot, body io.Reader) error {
	h := sha256.New()
	buf := make([]byte, snapshotChunk)
	for {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			h.Write(buf[:n])
			chunk := buf[:n]
			if werr := s.snapshotTx(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO ledger_snapshot_chunks (snapshot_id, n, body) VALUES (?, ?, ?)`,
					snap.ID, snap.Chunks, chunk)
				return err
			}); werr != nil {
				return werr
			}
			snap.Chunks++
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			snap.Digest = h.Sum(nil)
			return nil
		case err != nil:
			return err
		}
	}
}

// snapshotTx runs fn in a transaction of its own on the writing
// connection.
func (s *Store) snapshotTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// pruneSnapshots drops the complete snapshots older than the newest
// keepSnapshots, and incomplete ones abandoned by their writer.
func (s *Store) pruneSnapshots(ctx context.Context, now time.Time) error {
	rows, err := s.db.QueryContext(ctx, `SELECT snapshot_id, complete, taken_at FROM ledger_snapshots ORDER BY journal_size DESC, taken_at DESC`)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	var drop []string
	kept := 0
	for rows.Next() {
		var id, at string
		var complete int
		if err := rows.Scan(&id, &complete, &at); err != nil {
			rows.Close()
			return fmt.Errorf("prune: %w", err)
		}
		switch {
		case complete == 1 && kept < keepSnapshots:
			kept++
		case complete == 1 || now.Sub(parseTS(at)) > abandoned:
			drop = append(drop, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	return s.dropSnapshots(ctx, drop)
}

func (s *Store) dropSnapshots(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if err := s.snapshotTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `DELETE FROM ledger_snapshot_chunks WHERE snapshot_id = ?`, id); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM ledger_snapshots WHERE snapshot_id = ?`, id)
			return err
		}); err != nil {
			return fmt.Errorf("drop ledger snapshot %s: %w", id, err)
		}
	}
	return nil
}

// LedgerSnapshots lists up to limit complete snapshots, the one taken
// furthest along the journal first.
func (s *Store) LedgerSnapshots(ctx context.Context, limit int) ([]LedgerSnapshot, error) {
	rows, err := s.ro.QueryContext(ctx, `SELECT snapshot_id, journal_size, root, digest, chunks, taken_at FROM ledger_snapshots
		WHERE complete = 1 ORDER BY journal_size DESC, taken_at DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger snapshots: %w", err)
	}
	defer rows.Close()
	var out []LedgerSnapshot
	for rows.Next() {
		var sn LedgerSnapshot
		var size int64
		var at string
		if err := rows.Scan(&sn.ID, &size, &sn.Root, &sn.Digest, &sn.Chunks, &at); err != nil {
			return nil, fmt.Errorf("ledger snapshots: %w", err)
		}
		sn.JournalSize, sn.TakenAt = uint64(max(size, 0)), parseTS(at)
		out = append(out, sn)
	}
	return out, rows.Err()
}

// ReadLedgerSnapshot returns a reader of sn's body. One query reads its
// chunks in order, each copied out of the driver's buffer as it is read,
// not cloned first: a million tasks' snapshot is hundreds of megabytes.
// A missing chunk is an error wrapping ErrNotFound; the caller checks the
// digest, and closes the reader to end the query.
func (s *Store) ReadLedgerSnapshot(ctx context.Context, sn LedgerSnapshot) io.ReadCloser {
	return &chunkReader{ctx: ctx, db: s.ro, snap: sn}
}

type chunkReader struct {
	ctx  context.Context
	db   *sql.DB
	snap LedgerSnapshot
	rows *sql.Rows
	// next is the number of the chunk after the one read.
	next int
	// chunk is what is left of the chunk read, in the driver's memory
	// until the next row.
	chunk sql.RawBytes
	err   error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunk) == 0 && r.err == nil {
		r.err = r.nextChunk()
	}
	if len(r.chunk) == 0 {
		return 0, r.err
	}
	n := copy(p, r.chunk)
	r.chunk = r.chunk[n:]
	return n, nil
}

// nextChunk reads the next chunk into r.chunk; after the last one it ends
// the query and returns io.EOF.
func (r *chunkReader) nextChunk() error {
	if r.next >= r.snap.Chunks {
		if err := r.endQuery(); err != nil {
			return fmt.Errorf("ledger snapshot %s: %w", r.snap.ID, err)
		}
		return io.EOF
	}
	if r.rows == nil {
		rows, err := r.db.QueryContext(r.ctx, `SELECT n, body FROM ledger_snapshot_chunks WHERE snapshot_id = ? AND n < ? ORDER BY n`,
			r.snap.ID, r.snap.Chunks)
		if err != nil {
			return fmt.Errorf("ledger snapshot %s: %w", r.snap.ID, err)
		}
		r.rows = rows
	}
	if !r.rows.Next() {
		err := r.rows.Err()
		if err == nil {
			err = ErrNotFound
		}
		return fmt.Errorf("ledger snapshot %s chunk %d: %w", r.snap.ID, r.next, err)
	}
	var n int
	var chunk sql.RawBytes
	if err := r.rows.Scan(&n, &chunk); err != nil {
		return fmt.Errorf("ledger snapshot %s chunk %d: %w", r.snap.ID, r.next, err)
	}
	if n != r.next {
		return fmt.Errorf("ledger snapshot %s chunk %d: %w", r.snap.ID, r.next, ErrNotFound)
	}
	r.chunk = chunk
	r.next++
	return nil
}

// errReaderClosed is what a snapshot reader returns once closed before
// its end: a read after Close must not begin the body again.
var errReaderClosed = errors.New("ledger snapshot reader closed")

// Close ends the query, and any read after it; it may be called more
// than once.
func (r *chunkReader) Close() error {
	if r.err == nil {
		r.err = errReaderClosed
	}
	return r.endQuery()
}

// endQuery drops what is left of the chunk read, which the query's
// connection holds, and gives the connection back.
func (r *chunkReader) endQuery() error {
	r.chunk = nil
	if r.rows == nil {
		return nil
	}
	rows := r.rows
	r.rows = nil
	return rows.Close()
}

// JournalRootAt is the root of the journal's first size entries; it fails
// when the journal holds fewer.
func (s *Store) JournalRootAt(ctx context.Context, size uint64) (root []byte, err error) {
	err = s.readJournal(ctx, func(tx *sql.Tx) error {
		root, err = journal.RootAt(ctx, tx, size)
		return err
	})
	return root, err
}

// EntriesOfKindAfter reads up to limit of the journal's entries of one
// kind after position after (limit <= 0: all).
func (s *Store) EntriesOfKindAfter(ctx context.Context, kind string, after int64, limit int) ([]journal.Entry, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return journal.ReadKindAfter(ctx, s.roStmts, kind, after, limit)
}
