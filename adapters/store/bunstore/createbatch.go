package bunstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxCreateBatch bounds the creates one batch sends.
const maxCreateBatch = 32

// createBatcher runs the creates made outside a unit of work on at most
// as many connections as the pool has, and commits together those that
// queue meanwhile: each batch is one round trip on one connection (the
// statements pipelined, then one Sync), and PostgreSQL runs them as one
// implicit transaction, committed by one flush of its log. A create that
// finds a worker free runs alone, as before; under load, the creates that
// waited for a connection one by one, each to commit on its own, go
// together.
//
// A batch holds the creates of one team, all counted in one shard: it then
// holds one shard's row lock, as a create alone does, so it never waits
// for one lock while holding another, and cannot wait in a cycle with a
// create that locks every shard of a team. When a batch fails as a whole
// (a statement's error rolls back all of them), each of its creates runs
// again alone and meets its own outcome.
type createBatcher struct {
	pool    *pgxpool.Pool
	timeout time.Duration
	workers int

	mu      sync.Mutex
	queue   []*createCall
	running int
}

// createCall is one create waiting for its batch: pgCreateSQL, the name
// it is prepared by on the batches' connections, its arguments as
// pgCreateOne takes them (the shard, $4, set by the batch), and where its
// result goes.
type createCall struct {
	ctx             context.Context
	team, name, sql string
	max             int
	args            []any
	done            chan createResult
}

// createResult says whether a create was counted (and so inserted), or
// that it must run alone: its batch failed.
type createResult struct {
	counted bool
	err     error
	alone   bool
}

func newCreateBatcher(pool *pgxpool.Pool, timeout time.Duration) *createBatcher {
	return &createBatcher{pool: pool, timeout: timeout, workers: int(pool.Config().MaxConns)}
}

// do queues the create and waits for its result.
func (b *createBatcher) do(ctx context.Context, team string, max int, name, sql string, args []any) createResult {
	call := &createCall{ctx: ctx, team: team, max: max, name: name, sql: sql, args: args, done: make(chan createResult, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, call)
	start := b.running < b.workers
	if start {
		b.running++
	}
	b.mu.Unlock()
	if start {
		go b.run()
	}
	return <-call.done
}

// run sends batches until the queue is empty.
func (b *createBatcher) run() {
	for {
		calls := b.take()
		if len(calls) == 0 {
			return
		}
		b.send(calls)
	}
}

// take removes from the queue its first create and more of the same
// team, in their order, up to maxCreateBatch and, under a bound, up to
// one shard's share of it (the creates beyond would not count in the
// batch's shard, and go to look at every shard); with the queue empty it
// counts the worker out.
func (b *createBatcher) take() []*createCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.running--
		return nil
	}
	team, limit := b.queue[0].team, maxCreateBatch
	if max := b.queue[0].max; max > 0 {
		limit = min(limit, shardShare(profileShards-1, max))
	}
	limit = max(limit, 1)
	var calls []*createCall
	rest := b.queue[:0]
	for _, c := range b.queue {
		if c.team == team && len(calls) < limit {
			calls = append(calls, c)
		} else {
			rest = append(rest, c)
		}
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	return calls
}

// send runs calls: one alone, two or more as one batch, or hands them
// back to run alone when the batch failed.
func (b *createBatcher) send(calls []*createCall) {
	live := calls[:0]
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.done <- createResult{err: fmt.Errorf("bunstore: write profile: %w", err)}
			continue
		}
		live = append(live, c)
	}
	if len(live) == 1 {
		c := live[0]
		counted, err := pgCreateOne(c.ctx, b.pool, b.timeout, c.sql, c.args)
		c.done <- createResult{counted: counted, err: err}
		return
	}
	if len(live) == 0 {
		return
	}
	counted, err := b.commit(live)
	for i, c := range live {
		if err != nil {
			c.done <- createResult{alone: true}
		} else {
			c.done <- createResult{counted: counted[i]}
		}
	}
}

// commit sends the batch on a connection of the pool, all its creates
// counted in one shard, and says which were counted. An error means none
// of the batch was committed, or that it is not known whether it was.
func (b *createBatcher) commit(calls []*createCall) ([]bool, error) {
	ctx := context.Background()
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	c, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	shard := createShards.take()
	defer createShards.give(shard)
	batch := &pgx.Batch{}
	for _, call := range calls {
		// Prepared by name (once per connection: Prepare returns the
		// statement it has), the statement is sent as a create alone
		// sends it: its parameters in binary, its plan kept.
		if _, err := c.Conn().Prepare(ctx, call.name, call.sql); err != nil {
			return nil, err
		}
		call.args[1+pgCreateShardArg] = shard
		batch.Queue(call.name, call.args[1:]...)
	}
	results := c.SendBatch(ctx, batch)
	counted := make([]bool, len(calls))
	var errs []error
	for i := range calls {
		var one int
		switch err := results.QueryRow().Scan(&one); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			errs = append(errs, err)
		default:
			counted[i] = true
		}
	}
	if err := errors.Join(append(errs, results.Close())...); err != nil {
		return nil, err
	}
	return counted, nil
}
