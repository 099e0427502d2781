package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SQLite copies its write-ahead log into the database file at checkpoints.
// Left to itself it runs one on the commit that takes the log past 1,000
// pages: that commit, and every update group-committed with it, then
// waits for the copy and its fsyncs (a decision writes some ten pages, so
// about one commit in a hundred at one decision in flight). The store runs
// them on a connection of its own instead: a passive checkpoint takes no
// writer's lock, so commits go on while it copies.

// checkpointEvery is how often the background checkpoint runs; a test
// holds it back to see what the writer alone does.
var checkpointEvery = 200 * time.Millisecond

// writerCheckpointPages is the log's size, in pages, at which the writer
// still checkpoints on its own commit: a bound on the log should the
// background checkpoints fall behind, not the usual trigger.
const writerCheckpointPages = 16384

// checkpointer runs an SQLite store's checkpoints in the background.
// Commits do not depend on them: the log holds what they wrote.
type checkpointer struct {
	db *sql.DB
	*background
}

// startCheckpointer opens dsn on one connection of its own and checkpoints
// it every checkpointEvery until close.
func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db}
	c.background = startBackground(checkpointEvery, func() error { return c.checkpoint(context.Background()) })
	return c, nil
}

// checkpoint copies into the database file what the log holds and no
// reader still needs. With nothing new in the log it reads the log's
// header and returns, without a sync.
func (c *checkpointer) checkpoint(ctx context.Context) error {
	var busy, frames, copied int
	if err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("copy the store's SQLite WAL into its file: %w", err)
	}
	return nil
}

// close stops the checkpoints and closes their connection; a store may be
// closed more than once.
func (c *checkpointer) close() error {
	c.background.close()
	return c.db.Close()
}

// OnCheckpointError has f hear of each background checkpoint of an SQLite
// store that fails (a PostgreSQL store has none).
func (s *Store) OnCheckpointError(f func(error)) {
	if s.checkpoints != nil {
		s.checkpoints.onError(f)
	}
}
