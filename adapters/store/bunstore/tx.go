package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// inTx runs fn in ctx's unit, or else in a transaction of its own (runTx).
// In a unit fn's error fails the unit, which then rolls back whole, as
// every use case lets it and as the memory store does: a savepoint of its
// own cost each call two more round trips, and a create's held its team's
// lock through one of them.
func inTx(ctx context.Context, db *bun.DB, fn func(ctx context.Context, tx bun.Tx) error) error {
	if unit, ok := ctx.Value(txKey{db: db}).(bun.Tx); ok {
		return fn(ctx, unit)
	}
	return runTx(ctx, db, fn)
}

// runTx runs fn in a transaction of db and commits it; an error of fn, or
// a panic, rolls it back. Its error says what happened to the transaction:
// nil only when it committed.
//
// On PostgreSQL a COMMIT whose answer never came back (the connection
// failed on the way) may have committed or not. runTx reads the
// transaction's id just before COMMIT and, when COMMIT fails without an
// answer from the server, asks the server on another connection what
// became of it (resolveCommit): a transaction found committed returns nil,
// as if the answer had come.
func runTx(ctx context.Context, db *bun.DB, fn func(ctx context.Context, tx bun.Tx) error) error {
	var id pgXact
	committing := false
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if db.Dialect().Name() == dialect.PG {
			var err error
			if id, err = currentXact(ctx, tx); err != nil {
				return err
			}
		}
		committing = true
		return nil
	})
	if err == nil || !committing || !id.xid.Valid {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return err // the server answered: it rolled the transaction back
	}
	return resolveCommit(ctx, db, id, err)
}

// pgXact names a PostgreSQL transaction: its id (NULL while it has
// written nothing) and the process of the server that runs it.
type pgXact struct {
	xid sql.NullString
	pid int
}

func currentXact(ctx context.Context, tx bun.Tx) (pgXact, error) {
	var id pgXact
	err := tx.NewRaw("SELECT pg_current_xact_id_if_assigned()::text, pg_backend_pid()").Scan(ctx, &id.xid, &id.pid)
	if err != nil {
		return pgXact{}, fmt.Errorf("bunstore: read transaction id: %w", err)
	}
	return id, nil
}

// resolveWait bounds how long resolveCommit waits for the server to end a
// transaction whose connection failed.
const resolveWait = 10 * time.Second

// resolveCommit finds out whether the transaction id committed, after its
// COMMIT failed with commitErr and no answer: nil if it did, an error
// saying so if it did not or if that cannot be known. While its server
// process has not yet noticed that the connection is gone (COMMIT never
// reached it), the transaction is still in progress; the process is then
// ended (endXact), which rolls the transaction back, and waited for, so
// that the status read after is final.
func resolveCommit(ctx context.Context, db *bun.DB, id pgXact, commitErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveWait)
	defer cancel()
	status, err := xactStatus(ctx, db, id)
	if err == nil && status == "in progress" {
		_, err = endXact(ctx, db, id)
		if err == nil {
			status, err = xactStatus(ctx, db, id)
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("bunstore: commit failed and its outcome is unknown (%w): %w", err, commitErr)
	case status == "committed":
		return nil
	case status == "aborted":
		return fmt.Errorf("bunstore: commit failed; the transaction was rolled back: %w", commitErr)
	}
	return fmt.Errorf("bunstore: commit failed and the transaction is %s: %w", status, commitErr)
}

// endXact ends the server process id.pid if, and only if, it is still
// running the transaction id.xid, waits up to half of resolveWait for it
// to exit, and says whether it ended one. The transaction may end, and its
// process exit and its pid be taken by another connection, between the
// status that found it in progress and this; matching the transaction as
// well as the pid keeps that other connection alive. pg_stat_activity
// shows the 32-bit xid, to which the xid8 converts.
func endXact(ctx context.Context, db *bun.DB, id pgXact) (bool, error) {
	var ended bool
	err := db.NewRaw(
		"SELECT coalesce(bool_or(pg_terminate_backend(pid, ?)), false) FROM pg_stat_activity WHERE pid = ? AND backend_xid = ?::xid8::xid",
		(resolveWait/2).Milliseconds(), id.pid, id.xid.String,
	).Scan(ctx, &ended)
	return ended, err
}

// xactStatus is pg_xact_status of the transaction: committed, aborted or
// in progress.
func xactStatus(ctx context.Context, db *bun.DB, id pgXact) (string, error) {
	var status sql.NullString
	if err := db.NewRaw("SELECT pg_xact_status(?::xid8)", id.xid.String).Scan(ctx, &status); err != nil {
		return "", err
	}
	return status.String, nil
}
