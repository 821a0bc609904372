// Package unit is the unit of work every use case writes in: the store's
// transaction, the claim of the request's Idempotency-Key as its last
// statement, and what the use case registered to run once it has ended.
//
// A use case says where it writes what else a write entails: OnCommit for
// what may only follow a commit (waking the webhook dispatcher, logging a
// session), OnEnd for what must follow whatever the outcome (dropping a
// cached profile: a commit whose answer was lost may still have happened).
package unit

import (
	"context"
	"sync"

	"github.com/profilesvc/profilesvc/ports"
)

// Claims claims the Idempotency-Key of the request ctx carries, if any, in
// the unit ctx carries (application/idempotency).
type Claims interface {
	Claim(ctx context.Context) error
}

// Unit runs units of work of a store.
type Unit struct {
	store  ports.UnitOfWork
	claims Claims
}

// New returns the unit of work over store's, claiming Idempotency-Keys with
// claims (nil: none).
func New(store ports.UnitOfWork, claims Claims) *Unit {
	return &Unit{store: store, claims: claims}
}

// hooks are what one unit runs once it has ended.
type hooks struct {
	mu       sync.Mutex
	onCommit []func(context.Context)
	onEnd    []func(context.Context)
}

type hooksKey struct{}

// Do runs fn in one transaction of the store, then the request's claim, and
// commits; then it runs the hooks fn registered: those of OnEnd always,
// those of OnCommit when the unit committed.
func (u *Unit) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	h := &hooks{}
	err := u.store.Do(context.WithValue(ctx, hooksKey{}, h), func(ctx context.Context) error {
		if err := fn(ctx); err != nil {
			return err
		}
		if u.claims == nil {
			return nil
		}
		return u.claims.Claim(ctx)
	})
	h.mu.Lock()
	run := h.onEnd
	if err == nil {
		run = append(h.onCommit, run...)
	}
	h.onCommit, h.onEnd = nil, nil
	h.mu.Unlock()
	for _, f := range run {
		f(ctx)
	}
	return err
}

// OnCommit runs fn once the unit ctx carries has committed, and never if it
// does not; at once when ctx carries no unit (the write before it committed
// on its own). fn gets the context Do was called with.
func OnCommit(ctx context.Context, fn func(ctx context.Context)) {
	if h, ok := ctx.Value(hooksKey{}).(*hooks); ok {
		h.mu.Lock()
		h.onCommit = append(h.onCommit, fn)
		h.mu.Unlock()
		return
	}
	fn(ctx)
}

// OnEnd runs fn once the unit ctx carries has ended, committed or not; at
// once when ctx carries no unit (call it after the write, whatever the
// write returned).
func OnEnd(ctx context.Context, fn func(ctx context.Context)) {
	if h, ok := ctx.Value(hooksKey{}).(*hooks); ok {
		h.mu.Lock()
		h.onEnd = append(h.onEnd, fn)
		h.mu.Unlock()
		return
	}
	fn(ctx)
}
