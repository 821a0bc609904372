// Package memory owns the in-memory ports.Store: every repository held in
// process memory behind one lock. It is the reference implementation of the
// store contract, used by tests and by adopters who boot the service without
// a database; it keeps nothing across restarts.
package memory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Store = (*Store)(nil)

var (
	errUnitFinished = errors.New("memory store: transaction used after its unit of work finished")
	errInsideUnit   = errors.New("memory store: store called inside its own unit of work; use the tx repositories")
)

// Store keeps every repository in memory. A unit of work holds the write lock
// from start to end, so units run one at a time and a plain call from another
// goroutine waits until the unit has finished.
//
// Inside fn, use only tx: the store's own repositories (or a nested Do) would
// wait for the lock fn's unit holds. Such a call made with fn's context is
// refused with an error rather than left to deadlock.
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
// returns an error, panics, or the context ends before it returns.
func (s *Store) Do(ctx context.Context, fn func(ctx context.Context, tx ports.Repositories) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.refuseInsideUnit(ctx); err != nil {
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
	if err := fn(context.WithValue(ctx, txKey{}, tx), repositories{s: s, tx: tx}); err != nil {
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

// Users returns the user repository, each call on its own.
func (s *Store) Users() ports.UserRepository { return users{s: s} }

// Teams returns the team repository, each call on its own.
func (s *Store) Teams() ports.TeamRepository { return teams{s: s} }

// Memberships returns the membership repository, each call on its own.
func (s *Store) Memberships() ports.MembershipRepository { return memberships{s: s} }

// Invitations returns the invitation repository, each call on its own.
func (s *Store) Invitations() ports.InvitationRepository { return invitations{s: s} }

// APIKeys returns the API key repository, each call on its own.
func (s *Store) APIKeys() ports.APIKeyRepository { return apiKeys{s: s} }

// RefreshTokens returns the refresh token repository, each call on its own.
func (s *Store) RefreshTokens() ports.RefreshTokenRepository { return refreshTokens{s: s} }

// ResetTokens returns the reset token repository, each call on its own.
func (s *Store) ResetTokens() ports.ResetTokenRepository { return resetTokens{s: s} }

// Profiles returns the profile repository, each call on its own.
func (s *Store) Profiles() ports.ProfileRepository { return profiles{s: s} }

// WebhookEndpoints returns the webhook endpoint repository, each call on its own.
func (s *Store) WebhookEndpoints() ports.WebhookEndpointRepository { return webhookEndpoints{s: s} }

// Deliveries returns the delivery repository, each call on its own.
func (s *Store) Deliveries() ports.DeliveryRepository { return deliveries{s: s} }

// Outbox returns the outbox, each call on its own.
func (s *Store) Outbox() ports.Outbox { return outbox{s: s} }

// repositories is the set bound to one unit of work.
type repositories struct {
	s  *Store
	tx *txn
}

func (r repositories) Users() ports.UserRepository             { return users(r) }
func (r repositories) Teams() ports.TeamRepository             { return teams(r) }
func (r repositories) Memberships() ports.MembershipRepository { return memberships(r) }
func (r repositories) Invitations() ports.InvitationRepository { return invitations(r) }
func (r repositories) APIKeys() ports.APIKeyRepository         { return apiKeys(r) }
func (r repositories) RefreshTokens() ports.RefreshTokenRepository {
	return refreshTokens(r)
}
func (r repositories) ResetTokens() ports.ResetTokenRepository { return resetTokens(r) }
func (r repositories) Profiles() ports.ProfileRepository       { return profiles(r) }
func (r repositories) WebhookEndpoints() ports.WebhookEndpointRepository {
	return webhookEndpoints(r)
}
func (r repositories) Deliveries() ports.DeliveryRepository { return deliveries(r) }
func (r repositories) Outbox() ports.Outbox                 { return outbox(r) }

func (s *Store) refuseInsideUnit(ctx context.Context) error {
	if tx, ok := ctx.Value(txKey{}).(*txn); ok && tx.store == s && !tx.done.Load() {
		return errInsideUnit
	}
	return nil
}

// read runs fn with the state readable: inside the unit tx when tx is set,
// otherwise under the read lock.
func (s *Store) read(ctx context.Context, tx *txn, fn func(st *state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if tx != nil {
		tx.mu.Lock()
		defer tx.mu.Unlock()
		if tx.done.Load() {
			return errUnitFinished
		}
		return fn(&s.st)
	}
	if err := s.refuseInsideUnit(ctx); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(&s.st)
}

// write runs fn with the state writable. Inside a unit, fn's changes go to
// the unit's undo log; outside one, each call is its own commit and needs no
// log, because every write checks before it changes anything.
func (s *Store) write(ctx context.Context, tx *txn, fn func(st *state, undo *undoLog) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if tx != nil {
		tx.mu.Lock()
		defer tx.mu.Unlock()
		if tx.done.Load() {
			return errUnitFinished
		}
		return fn(&s.st, &tx.undo)
	}
	if err := s.refuseInsideUnit(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(&s.st, nil)
}
