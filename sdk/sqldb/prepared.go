package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// Prepared runs queries on one database through statements prepared once
// per query text: parsing a statement costs more than running most of
// them on one row. It is safe for concurrent use; close it before the
// database.
type Prepared struct {
	db *sql.DB
	m  sync.Map // query → *sql.Stmt
}

// NewPrepared runs queries on db.
func NewPrepared(db *sql.DB) *Prepared { return &Prepared{db: db} }

// Querier is what runs a query: a [Prepared], or one within a transaction
// ([Prepared.In]).
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Querier = (*Prepared)(nil)
	_ Querier = preparedTx{}
)

// stmt is query prepared; a query that does not prepare runs unprepared,
// where it fails with the same error.
func (p *Prepared) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := p.Cached(query); st != nil {
		return st
	}
	return p.prepare(ctx, query)
}

// Cached is query's statement if it is prepared already, else nil. A
// database with one connection, which a transaction holds, cannot prepare
// during it: it runs the query unprepared and prepares it afterwards
// ([Prepared.PrepareAll]).
func (p *Prepared) Cached(query string) *sql.Stmt {
	if v, ok := p.m.Load(query); ok {
		return v.(*sql.Stmt)
	}
	return nil
}

// PrepareAll prepares the queries not prepared yet; one that does not
// prepare keeps running unprepared.
func (p *Prepared) PrepareAll(ctx context.Context, queries []string) {
	for _, q := range queries {
		if p.Cached(q) == nil {
			p.prepare(ctx, q)
		}
	}
}

func (p *Prepared) prepare(ctx context.Context, query string) *sql.Stmt {
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if v, loaded := p.m.LoadOrStore(query, st); loaded {
		_ = st.Close()
		return v.(*sql.Stmt)
	}
	return st
}

// ExecContext runs a statement.
func (p *Prepared) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.db.ExecContext(ctx, query, args...)
}

// QueryContext runs a query.
func (p *Prepared) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a query of one row.
func (p *Prepared) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

// In runs queries within tx, a transaction of the same database.
func (p *Prepared) In(tx *sql.Tx) Querier { return preparedTx{p: p, tx: tx} }

// Close closes every statement prepared.
func (p *Prepared) Close() error {
	var errs []error
	p.m.Range(func(q, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		p.m.Delete(q)
		return true
	})
	return errors.Join(errs...)
}

type preparedTx struct {
	p  *Prepared
	tx *sql.Tx
}

func (t preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.p.stmt(ctx, query); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.p.stmt(ctx, query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.p.stmt(ctx, query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
