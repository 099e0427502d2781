package store

import (
	"cmp"
	"database/sql"
	"fmt"
	"strings"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// deferredRows are the rows an update writes without a statement of its
// own: new capabilities and answers to request ids. They are stored with
// the other updates' of its batch, or go to the log file with them.
type deferredRows struct {
	caps []Capability
	reqs []Request
}

// add appends o's rows to d's.
func (d *deferredRows) add(o deferredRows) {
	d.caps = append(d.caps, o.caps...)
	d.reqs = append(d.reqs, o.reqs...)
}

// store stores d's rows in t (new capabilities pending, see
// insertCapabilities) and empties d.
func (d *deferredRows) store(t *txn) error {
	caps, reqs := d.caps, d.reqs
	*d = deferredRows{}
	if len(caps) > 0 {
		if err := insertCapabilities(t, caps); err != nil {
			return err
		}
	}
	return insertRequests(t, reqs)
}

// batchSQL is how the updates of a group commit reach SQL. An update's
// deferred rows (deferredRows) are stored with the other updates' in one
// statement, so an update that runs no statement of its own (a decision
// that issues a capability) needs no savepoint: if it fails, SQL holds
// nothing of it to undo. The first statement of an update that does run
// one first stores what earlier updates deferred, then opens the update's
// savepoint; each of its statements first stores its own deferred rows,
// so every statement sees every row written before it.
type batchSQL struct {
	// bt runs the batch's own statements (savepoints, deferred rows, the
	// journal's rows) through the statement cache.
	bt *txn
	// savepoints marks a batch of more than one update, each of which
	// rolls back alone.
	savepoints bool
	// deferred are the rows of the batch's updates that succeeded, not
	// stored yet.
	deferred deferredRows
	// err is set once storing the deferred rows failed: the batch rolls
	// back.
	err error
	// tx is the batch's transaction, begun by its first statement
	// (beginLazily), and beginErr why it could not be; copiedFailed are
	// the acknowledged batches a failed copy left, copied at its start.
	tx           *sql.Tx
	beginErr     error
	copiedFailed []*logged
}

// store stores the rows earlier updates deferred, outside any update's
// savepoint.
func (b *batchSQL) store() error {
	if b.err == nil {
		b.err = b.deferred.store(b.bt)
	}
	return b.err
}

// enter readies SQL for a statement of an update (see batchSQL). An error
// also fails the update whatever it returns ([txn.failed]): a row it
// deferred may not be stored.
func (t *txn) enter() error {
	if t.lazy != nil && t.lazy.tx == nil {
		if _, err := t.lazy.beginLazily(); err != nil {
			t.failed = cmp.Or(t.failed, err)
			return err
		}
	}
	if t.settling {
		// A Read's first statement: SQLite must hold what was
		// acknowledged.
		t.settling = false
		if err := t.s.settle(t.ctx); err != nil {
			t.failed = cmp.Or(t.failed, err)
			return err
		}
	}
	b := t.sql
	if b == nil || t.failed != nil {
		return t.failed
	}
	if !t.entered {
		t.entered = true
		if err := b.store(); err != nil {
			t.failed = err
			return err
		}
		if b.savepoints {
			if _, err := b.bt.ExecContext(b.bt.ctx, `SAVEPOINT update_job`); err != nil {
				t.failed = fmt.Errorf("savepoint: %w", err)
				return t.failed
			}
			t.savepoint = true
		}
	}
	if err := t.deferred.store(b.bt); err != nil {
		t.failed = err
		return err
	}
	return nil
}

// capabilitiesPerInsert bounds the rows one statement stores: 64 rows of
// 18 columns bind 1,152 parameters, far below SQLite's limit.
const capabilitiesPerInsert = 64

// capabilityColumnCount is the number of capabilityColumns.
var capabilityColumnCount = strings.Count(capabilityColumns, ",") + 1

// insertCapabilitiesQuery[n] inserts n capability rows into table.
func insertCapabilitiesQuery(table string) (q [capabilitiesPerInsert + 1]string) {
	row := "(" + sqldb.Placeholders(capabilityColumnCount) + ")"
	for n := 1; n <= capabilitiesPerInsert; n++ {
		q[n] = `INSERT INTO ` + table + ` (` + capabilityColumns + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
	}
	return q
}

// insertPending and insertShared insert new capabilities on an exclusive
// store (pending.go) and on a shared one; a copy of logged batches
// inserts into capabilities too (insertLogged).
var insertPending, insertShared = insertCapabilitiesQuery("capabilities_pending"), insertCapabilitiesQuery("capabilities")

// insertCapabilities stores new capability rows: on an exclusive store
// in the pending table (pending.go), on a shared one in capabilities.
func insertCapabilities(t *txn, cs []Capability) error {
	if t.s.pg != nil {
		return insertCapabilityRows(t, cs, &insertShared)
	}
	t.s.moveDue.Store(true)
	if t.s.pendingStored.Add(int64(len(cs))) >= moveAt && t.s.mover != nil {
		t.s.mover.wake() // its move commits after this batch
	}
	return insertCapabilityRows(t, cs, &insertPending)
}

// insertCapabilityRows stores capability rows with query, a statement
// per capabilitiesPerInsert of them.
func insertCapabilityRows(t *txn, cs []Capability, query *[capabilitiesPerInsert + 1]string) error {
	for len(cs) > 0 {
		n := min(len(cs), capabilitiesPerInsert)
		args := make([]any, 0, capabilityColumnCount*n)
		for _, c := range cs[:n] {
			args = append(args, c.CapabilityID, c.DecisionID, c.TaskID, c.Record, c.StateVersion, c.IdempotencyKey, c.Tool, c.Currency,
				c.AmountMinor, c.Status, c.EffectReceiptID, c.ReadbackReceiptID, c.Note, ts(c.IssuedAt), ts(c.ExpiresAt), c.ApprovalID, c.EffectHash, c.Holder)
		}
		if _, err := t.ExecContext(t.ctx, query[n], args...); err != nil {
			return fmt.Errorf("capability %q (and %d after it): %w", cs[0].CapabilityID, n-1, err)
		}
		cs = cs[n:]
	}
	return nil
}
