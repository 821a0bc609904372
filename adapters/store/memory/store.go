// Package memory owns the in-memory storage.Store: one table per kind of row
// (users, teams, memberships, invitations, API keys, tokens, profiles, proxies,
// snapshots, blob uploads and blob candidates, webhook endpoints, deliveries,
// the outbox, idempotency records, the fleet's instances) held in process
// memory behind one lock, and the undo log that rolls a unit of work back. It
// is the reference implementation of the store contract, used by tests and by
// adopters who boot the service without a database; it keeps nothing across
// restarts.
package memory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/profilesvc/profilesvc/ports/storage"
)

var _ storage.Store = (*Store)(nil)

var (
	errUnitFinished = errors.New("memory store: transaction used after its unit of work finished")
	errNestedUnit   = errors.New("memory store: unit of work started inside another; units do not nest")
)

// Store keeps every repository in memory. A unit of work holds the write lock
// from start to end, so units run one at a time and a plain call from another
// goroutine waits until the unit has finished.
//
// Inside fn, call repositories with fn's context: that context carries the
// unit, so the calls write to it. A call with another context would wait for
// the lock fn's unit holds; a nested Do with fn's context is refused with an
// error rather than left to deadlock.
type Store struct {
	mu sync.RWMutex
	st state
}

// New returns an empty store.
func New() *Store {
	return &Store{st: newState()}
}

// txn is one unit of work. Its mutex serialises calls on tx, since fn may hand
// tx to goroutines of its own while the store's lock is held for all of them.
type txn struct {
	store *Store
	mu    sync.Mutex
	done  atomic.Bool
	undo  undoLog
}

type txKey struct{}

// Do runs fn under the store's write lock and undoes every write fn made if fn
// returns an error, panics, or the context ends before it returns. The unit
// travels in fn's context: repositories called with it write to the unit.
func (s *Store) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.refuseNested(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	tx := &txn{store: s}
	committed := false
	defer func() {
		// Runs on return and while a panic unwinds, so the lock is never
		// left held and a panicking unit leaves nothing behind.
		tx.mu.Lock()
		if !committed {
			tx.undo.rollback()
		}
		tx.done.Store(true)
		tx.mu.Unlock()
		s.mu.Unlock()
	}()
	if err := fn(context.WithValue(ctx, txKey{}, tx)); err != nil {
		return err
	}
	// A database would refuse to commit once the context has ended.
	if err := ctx.Err(); err != nil {
		return err
	}
	committed = true
	return nil
}

// Ping always succeeds: there is nothing to reach.
func (s *Store) Ping(context.Context) error { return nil }

// unitOf returns the unit of work of this store that ctx carries, if any.
func (s *Store) unitOf(ctx context.Context) *txn {
	if tx, ok := ctx.Value(txKey{}).(*txn); ok && tx.store == s {
		return tx
	}
	return nil
}

func (s *Store) refuseNested(ctx context.Context) error {
	if tx := s.unitOf(ctx); tx != nil && !tx.done.Load() {
		return errNestedUnit
	}
	return nil
}

// read runs fn with the state readable: inside the unit ctx carries, if any,
// otherwise under the read lock.
func (s *Store) read(ctx context.Context, fn func(st *state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if tx := s.unitOf(ctx); tx != nil {
		tx.mu.Lock()
		defer tx.mu.Unlock()
		if tx.done.Load() {
			return errUnitFinished
		}
		return fn(&s.st)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(&s.st)
}

// write runs fn with the state writable. Inside a unit, fn's changes go to
// the unit's undo log; outside one, each call is its own commit and needs no
// log, because every write checks before it changes anything.
func (s *Store) write(ctx context.Context, fn func(st *state, undo *undoLog) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if tx := s.unitOf(ctx); tx != nil {
		tx.mu.Lock()
		defer tx.mu.Unlock()
		if tx.done.Load() {
			return errUnitFinished
		}
		return fn(&s.st, &tx.undo)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(&s.st, nil)
}

// readValue is read for a call that returns a value: the zero value with any
// error.
func readValue[V any](ctx context.Context, s *Store, fn func(st *state) (V, error)) (V, error) {
	var v V
	err := s.read(ctx, func(st *state) error {
		var err error
		v, err = fn(st)
		return err
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v, nil
}

// writeValue is write for a call that returns a value, as readValue is.
func writeValue[V any](ctx context.Context, s *Store, fn func(st *state, undo *undoLog) (V, error)) (V, error) {
	var v V
	err := s.write(ctx, func(st *state, undo *undoLog) error {
		var err error
		v, err = fn(st, undo)
		return err
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v, nil
}
