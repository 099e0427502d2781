package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/jackc/pgx/v5"
)

// A PostgreSQL store may be shared by several kernel replicas. They keep
// one journal in one total order by taking one advisory lock for every
// write transaction (the same serial order SQLite's single writer gives);
// each replica then catches up, inside that transaction, with the entries
// the others committed: its journal frontier, and whatever in memory
// follows the journal ([Store.Follow]). A notification on commit tells the
// others at once, so that their reads catch up too.

// writeLock is the advisory lock every write transaction holds.
const writeLock = 0x616d6269_74000002

// notifyChannel carries the journal's size after each commit that grew it.
const notifyChannel = "ambit_journal"

type shared struct {
	dsn string
	// mu guards follow and listening.
	mu        sync.Mutex
	follow    []func(context.Context, []journal.Entry) error
	listening bool
	stop      context.CancelFunc
	done      chan struct{}
}

func openPostgres(ctx context.Context, dsn string, d Durability) (*Store, error) {
	name := sqldb.Redact(dsn)
	db, err := sqldb.OpenPostgres(dsn, d.PostgresParams())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	db.SetMaxOpenConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	if err := migrate(ctx, db, true); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	ro, err := sqldb.OpenPostgres(dsn, map[string]string{"default_transaction_read_only": "on"})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	ro.SetMaxOpenConns(4)
	sh := &shared{dsn: dsn, done: make(chan struct{}), stop: func() {}}
	return newStore(ctx, db, ro, sh)
}

// Follow registers fn to receive, in order, the journal entries other
// replicas commit, before any later update of this store runs and before a
// read sees them. It runs in the goroutine that runs updates; an error
// fails the update that caught up, and the entries come again. The first
// registration starts listening for the others' commits, so that nothing
// is caught up before a follower can see it. An SQLite store has no other
// writers: fn never runs.
func (s *Store) Follow(fn func(ctx context.Context, entries []journal.Entry) error) {
	if s.pg == nil {
		return
	}
	sh := s.pg
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.follow = append(sh.follow, fn)
	if !sh.listening {
		sh.listening = true
		ctx, stop := context.WithCancel(context.Background())
		sh.stop = stop
		go sh.listen(ctx, s)
	}
}

func (sh *shared) followers() []func(context.Context, []journal.Entry) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.follow
}

// lockAndCatchUp takes the writers' lock in tx, then brings the frontier
// and the followers up to the journal's committed head.
func (sh *shared) lockAndCatchUp(tx *sql.Tx, s *Store) error {
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(writeLock)); err != nil {
		return fmt.Errorf("journal lock: %w", err)
	}
	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM journal`).Scan(&head); err != nil {
		return fmt.Errorf("journal head: %w", err)
	}
	have := s.frontier.Size()
	switch {
	case uint64(head) == have && s.frontierErr == nil:
		return nil
	case uint64(head) < have:
		// Entries this replica saw committed are gone: fail closed.
		return fmt.Errorf("the shared journal has %d entries, fewer than the %d this kernel saw committed", head, have)
	}
	entries, err := journal.Read(ctx, tx, int64(have), 0)
	if err != nil {
		return err
	}
	f, err := journal.LoadFrontier(ctx, tx)
	if err != nil {
		return err
	}
	for _, fn := range sh.followers() {
		if err := fn(ctx, entries); err != nil {
			return fmt.Errorf("follow the journal: %w", err)
		}
	}
	s.frontier, s.frontierErr = f, nil
	s.grew()
	return nil
}

// notify tells the other replicas, on commit, the journal's new size.
func (sh *shared) notify(tx *sql.Tx, size uint64) error {
	if _, err := tx.ExecContext(context.Background(), `SELECT pg_notify(?, ?)`, notifyChannel, strconv.FormatUint(size, 10)); err != nil {
		return fmt.Errorf("journal notify: %w", err)
	}
	return nil
}

// catchUpIfBehind catches up when the journal's committed head is past
// what this store has seen: one read, and an update only when behind.
func (sh *shared) catchUpIfBehind(ctx context.Context, s *Store) error {
	var head int64
	if err := s.ro.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM journal`).Scan(&head); err != nil {
		return fmt.Errorf("journal head: %w", err)
	}
	if uint64(head) <= s.size.Load() {
		return nil
	}
	return s.catchUp(ctx)
}

// catchUp runs an empty update: taking the lock catches up.
func (s *Store) catchUp(ctx context.Context) error {
	return s.Update(ctx, func(Tx) error { return nil })
}

// listen catches up whenever another replica's commit is announced, and
// after every (re)connection, in case announcements were missed.
func (sh *shared) listen(ctx context.Context, s *Store) {
	defer close(sh.done)
	for ctx.Err() == nil {
		_ = sh.listenOnce(ctx, s) // a broken connection: connect again
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (sh *shared) listenOnce(ctx context.Context, s *Store) error {
	conn, err := pgx.Connect(ctx, sh.dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return err
	}
	if err := s.catchUp(ctx); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if size, err := strconv.ParseUint(n.Payload, 10, 64); err == nil && size <= s.size.Load() {
			continue // already caught up
		}
		if err := s.catchUp(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
}

func (sh *shared) close() error {
	sh.mu.Lock()
	listening := sh.listening
	sh.mu.Unlock()
	sh.stop()
	if listening {
		<-sh.done
	}
	return nil
}
