package apptest

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Outbox = RefusingOutbox{}

// RefusingOutbox is an outbox that refuses every event with Err, so that
// the unit of work the event belongs to fails.
type RefusingOutbox struct{ Err error }

// Append answers Err.
func (o RefusingOutbox) Append(context.Context, event.Event) error { return o.Err }

// UnreadableUsers stands in for the users the accounts module owns, as the
// other modules read them, when they cannot be read: every read answers Err.
type UnreadableUsers struct{ Err error }

// ByID answers Err.
func (u UnreadableUsers) ByID(context.Context, string) (account.User, error) {
	return account.User{}, u.Err
}

// ByEmail answers Err.
func (u UnreadableUsers) ByEmail(context.Context, string) (account.User, error) {
	return account.User{}, u.Err
}

// ListByIDs answers Err.
func (u UnreadableUsers) ListByIDs(context.Context, []string) ([]account.User, error) {
	return nil, u.Err
}
