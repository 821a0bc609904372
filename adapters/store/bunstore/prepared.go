package bunstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// prepared runs statements on PostgreSQL through pgx's statement cache:
// prepared once per connection, then one round trip that neither parses
// nor plans (bun writes the values into the text, which makes a statement
// new whenever they change). Statements run in ctx's unit when there is
// one, and are bounded as bun's hook bounds statements.
//
// Only for statements whose best plan does not change as their tables
// grow (reads and writes by key): a prepared statement keeps the plan it
// was first given until the table is analyzed again. The outbox's claim,
// prepared, kept a plan made on an empty outbox_pending (read every entry
// and sort) and took 14 ms where, planned each time, it takes about 1.
type prepared struct {
	db      *bun.DB
	timeout time.Duration
}

type sqlRunner interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// on is ctx's unit's transaction, or the database.
func (p prepared) on(ctx context.Context) sqlRunner {
	if unit, ok := ctx.Value(txKey{db: p.db}).(bun.Tx); ok {
		return unit.Tx
	}
	return p.db.DB
}

// bounded is ctx with the statement bound, and its cancel.
func (p prepared) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.timeout > 0 && ctx.Value(noDeadlineKey{}) == nil {
		return context.WithTimeout(ctx, p.timeout)
	}
	return ctx, func() {}
}

// query runs query and scans its rows into dest as bun scans a model.
func (p prepared) query(ctx context.Context, dest any, query string, args ...any) error {
	return p.queryOn(ctx, p.on(ctx), dest, query, args...)
}

// queryOn is query on db.
func (p prepared) queryOn(ctx context.Context, db sqlRunner, dest any, query string, args ...any) error {
	ctx, cancel := p.bounded(ctx)
	defer cancel()
	rows, err := db.QueryContext(ctx, query, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
	if err != nil {
		return err
	}
	return p.db.ScanRows(ctx, rows, dest)
}
