// Package bunstore owns the SQL storage of the service: every repository of
// storage.Store implemented with bun, on SQLite (the embedded default, pure-Go
// driver) or on PostgreSQL (pgx), and the running of the embedded migrations.
package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

var _ storage.Store = (*Store)(nil)

// Dialect names returned by (*Store).Dialect.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// postgresPoolSize suits the 2-core machines the service is measured on; a
// much larger pool was slower.
const postgresPoolSize = 8

// Store is a storage.Store on one SQL database.
type Store struct {
	db *bun.DB
	// pool is the pgx pool under db on PostgreSQL (nil on SQLite).
	pool    *pgxpool.Pool
	dialect string
	// queryTimeout is Options.QueryTimeout, for the statements that pass
	// their parameters to pgx (prepared) instead of through bun's hooks.
	queryTimeout time.Duration
}

// Options says which database Open connects to.
type Options struct {
	// Dialect is DialectSQLite or DialectPostgres.
	Dialect string
	// Path is the SQLite database file, whose directory Open creates, or
	// ":memory:".
	Path string
	// DSN is the PostgreSQL connection string as pgx reads it: a
	// postgres:// URL or key=value pairs.
	DSN string
	// QueryTimeout bounds each PostgreSQL statement, the wait for a pooled
	// connection included, and each transaction as a whole; zero leaves
	// them unbounded. Migrations are not bounded.
	QueryTimeout time.Duration

	// tracer sees every statement pgx sends (tests count round trips).
	tracer pgx.QueryTracer
}

// Open connects to the database of o. It does not run migrations.
func Open(ctx context.Context, o Options) (*Store, error) {
	var (
		db      *bun.DB
		pool    *pgxpool.Pool
		dialect = o.Dialect
		err     error
	)
	switch dialect {
	case DialectSQLite:
		db, err = openSQLite(o.Path)
	case DialectPostgres:
		db, pool, err = openPostgres(o.DSN, o.tracer)
		if err == nil && o.QueryTimeout > 0 {
			db = db.WithQueryHook(deadlineHook{timeout: o.QueryTimeout})
		}
	default:
		return nil, fmt.Errorf("unknown dialect %q: want %q or %q", dialect, DialectSQLite, DialectPostgres)
	}
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, pool: pool, dialect: dialect, queryTimeout: o.QueryTimeout}
	if err := db.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("connect to %s database: %w", dialect, err)
	}
	return s, nil
}

func openSQLite(path string) (*bun.DB, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite needs a file path")
	}
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create directory for %s: %w", path, err)
		}
		if err := ownerOnly(path); err != nil {
			return nil, err
		}
	}
	// _txlock=immediate takes the write lock at BEGIN: a transaction that
	// first reads and then writes could otherwise fail with SQLITE_BUSY when
	// another process (say, the sqlite3 shell) writes in between.
	dsn := "file:" + path + "?_txlock=immediate" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=busy_timeout(5000)" +
		"&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(NORMAL)"
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// SQLite has one writer. One connection makes callers queue in Go rather
	// than fail with "database is locked", and keeps a :memory: database
	// alive. The price: inside a transaction every query must go through the
	// transaction, or it waits forever for the connection the transaction holds.
	sqldb.SetMaxOpenConns(1)
	sqldb.SetMaxIdleConns(1)
	sqldb.SetConnMaxLifetime(0)
	sqldb.SetConnMaxIdleTime(0)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// ownerOnly creates the database file readable and writable by its owner
// alone (it holds password hashes and sealed secrets), or narrows an
// existing one to that. SQLite gives its -wal and -shm files the mode of the
// database file.
func ownerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	return nil
}

// openPostgres opens a pgx pool and bun on it through database/sql.
// database/sql hands a freed connection to a waiter picked at random, so
// with more requests than connections some waited many times longer than
// others; pgxpool serves its waiters in order. database/sql therefore
// keeps no connection of its own (no idle ones, no bound on open ones):
// each of its connections is one acquired from the pool for the time it
// is used.
func openPostgres(dsn string, tracer pgx.QueryTracer) (*bun.DB, *pgxpool.Pool, error) {
	if dsn == "" {
		// pgx takes an empty DSN as "every default" and connects wherever
		// the PG* variables point, which is never what the caller meant.
		return nil, nil, fmt.Errorf("postgres needs a DSN")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open postgres: %w", err)
	}
	// bun writes the values into the statement's text, so almost every
	// statement is new: pgx's default mode would prepare each in a round
	// trip of its own before running it, and evict the statements worth
	// keeping. "exec" runs them in one round trip.
	if !strings.Contains(dsn, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = postgresPoolSize
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open postgres: %w", err)
	}
	sqldb := stdlib.OpenDBFromPool(pool)
	sqldb.SetMaxOpenConns(0)
	return bun.NewDB(sqldb, pgdialect.New()), pool, nil
}

// Close closes the database.
func (s *Store) Close() error {
	err := s.db.Close()
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// DB returns the underlying database, for migrations and tests.
func (s *Store) DB() *bun.DB { return s.db }

// Dialect returns DialectSQLite or DialectPostgres.
func (s *Store) Dialect() string { return s.dialect }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Do runs fn in one transaction, carried by fn's context (runTx): rolled
// back when fn returns an error or panics (the panic goes on to the
// caller), and an error returned only when the transaction did not commit.
func (s *Store) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, nested := ctx.Value(txKey{db: s.db}).(bun.Tx); nested {
		return errNestedUnit
	}
	return runTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		return fn(context.WithValue(ctx, txKey{db: s.db}, tx))
	})
}

var errNestedUnit = errors.New("unit of work started inside another; units do not nest")

// txKey finds a unit's transaction in its context; keyed by database, so a
// unit of one store never leaks into another's calls.
type txKey struct{ db *bun.DB }

// conn is what a repository call runs on: the transaction of the unit ctx
// carries, or the database itself.
func conn(ctx context.Context, db *bun.DB) bun.IDB {
	if tx, ok := ctx.Value(txKey{db: db}).(bun.Tx); ok {
		return tx
	}
	return db
}

// PoolStats are the store's connections: most it may open, open now, in
// use, idle, and how many times and how long callers waited for one.
type PoolStats struct {
	Max, Open, InUse, Idle int
	Waits                  int64
	Waited                 time.Duration
}

// PoolStats reads the pool's counts: pgx's on PostgreSQL, database/sql's
// on SQLite.
func (s *Store) PoolStats() PoolStats {
	if s.pool != nil {
		st := s.pool.Stat()
		return PoolStats{Max: int(st.MaxConns()), Open: int(st.TotalConns()), InUse: int(st.AcquiredConns()), Idle: int(st.IdleConns()),
			Waits: st.EmptyAcquireCount(), Waited: st.EmptyAcquireWaitTime()}
	}
	st := s.db.DB.Stats()
	return PoolStats{Max: st.MaxOpenConnections, Open: st.OpenConnections, InUse: st.InUse, Idle: st.Idle, Waits: st.WaitCount, Waited: st.WaitDuration}
}
