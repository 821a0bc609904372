package apptest

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
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

// UserCreator stores users, as the accounts module's store does.
type UserCreator interface {
	Create(ctx context.Context, u account.User) error
}

// TeamCreator stores teams, as the teams module's store does.
type TeamCreator interface {
	Create(ctx context.Context, t team.Team) error
}

// Seed stores the teams team_1 and team_2 and the users given, all made
// at at: the accounts and teams a module's tests act in. A store that
// refuses one fails the test.
func Seed(t testing.TB, users UserCreator, teams TeamCreator, at time.Time, seeded ...account.User) {
	t.Helper()
	ctx := context.Background()
	for _, u := range seeded {
		u.CreatedAt, u.UpdatedAt = at, at
		if err := users.Create(ctx, u); err != nil {
			t.Fatalf("seed user %s: %v", u.ID, err)
		}
	}
	for _, id := range []string{"team_1", "team_2"} {
		if err := teams.Create(ctx, team.Team{ID: id, Name: id, CreatedAt: at}); err != nil {
			t.Fatalf("seed team %s: %v", id, err)
		}
	}
}
