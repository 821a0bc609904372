package teams_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/teamstore"
)

var (
	ctx   = context.Background()
	start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

// apptest.ErrDown is what a failing fake answers.

// env is one service over the memory store. Tests replace single
// dependencies in deps before calling service.
type env struct {
	store  *memory.Store
	clock  *clock.Fake
	ids    *apptest.IDs
	mailer *apptest.Mailer
	logs   *apptest.Logs
	deps   teams.Deps
}

func newEnv() *env {
	s := memory.New()
	c := clock.NewFake(start)
	e := &env{store: s, clock: c, ids: apptest.NewIDs(), mailer: &apptest.Mailer{}, logs: &apptest.Logs{}}
	e.deps = teams.Deps{
		Tx:          unit.New(s, nil),
		Teams:       s.Teams(),
		Memberships: s.Memberships(),
		Invitations: s.Invitations(),
		Users:       s.Users(),
		Outbox:      s.Outbox(),
		Mailer:      e.mailer,
		Clock:       c,
		IDs:         e.ids,
		Log:         e.logs.Logger(),
		Policy:      teams.DefaultPolicy(),
		Keys:        &memberKeys{},
		ConsoleURL:  func() string { return "https://console.test/app" },
	}
	return e
}

func (e *env) service() *teams.Service { return teams.New(e.deps) }

// user stores an account.
func (e *env) user(t *testing.T, email, name string) account.User {
	t.Helper()
	u, err := account.NewUser(e.ids.New("usr"), email, name, "hash:x", "", start)
	if err != nil {
		t.Fatalf("new user: %v", err)
	}
	if err := e.store.Users().Create(ctx, u); err != nil {
		t.Fatalf("create user: %v", err)
	}
	return u
}

// founded stores a team owned by u and returns u's actor there.
func (e *env) founded(t *testing.T, name string, u account.User) team.Actor {
	t.Helper()
	tm, err := team.NewTeam(e.ids.New("team"), name, start)
	if err != nil {
		t.Fatalf("new team: %v", err)
	}
	if err := e.store.Teams().Create(ctx, tm); err != nil {
		t.Fatalf("create team: %v", err)
	}
	m := team.NewOwner(e.ids.New("mem"), tm.ID, u.ID, u.Email, e.clock.Now())
	if err := e.store.Memberships().Create(ctx, m); err != nil {
		t.Fatalf("create owner: %v", err)
	}
	return team.Actor{UserID: u.ID, TeamID: tm.ID, MemberID: m.ID, Role: team.RoleOwner}
}

// join makes u an active member of teamID with role and returns u's actor.
func (e *env) join(t *testing.T, teamID string, u account.User, role team.Role) team.Actor {
	t.Helper()
	m := team.NewInvited(e.ids.New("mem"), teamID, u.ID, u.Email, role, e.clock.Now())
	if err := e.store.Memberships().Create(ctx, m); err != nil {
		t.Fatalf("create membership: %v", err)
	}
	m, err := m.Accept(u.ID, e.clock.Now())
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	if err := e.store.Memberships().Update(ctx, m); err != nil {
		t.Fatalf("activate membership: %v", err)
	}
	return team.Actor{UserID: u.ID, TeamID: teamID, MemberID: m.ID, Role: role}
}

// adaEnv returns a new env where ada has founded her team, and her actor
// there.
func adaEnv(t *testing.T) (*env, team.Actor) {
	t.Helper()
	e := newEnv()
	return e, e.founded(t, "Ada's team", e.user(t, "ada@example.com", "Ada"))
}

// newMember stores a user called name, at name@example.com in lower case,
// and makes them an active member of teamID with role.
func (e *env) newMember(t *testing.T, teamID, name string, role team.Role) team.Actor {
	t.Helper()
	return e.join(t, teamID, e.user(t, strings.ToLower(name)+"@example.com", name), role)
}

// actorWith returns owner when role is an owner's, or else a new member
// of owner's team with role.
func (e *env) actorWith(t *testing.T, owner team.Actor, role team.Role) team.Actor {
	t.Helper()
	if role == team.RoleOwner {
		return owner
	}
	return e.newMember(t, owner.TeamID, "Act", role)
}

// wantNotInvited fails if inviting email to teamID left a membership, mail
// or an event.
func (e *env) wantNotInvited(t *testing.T, teamID, email string) {
	t.Helper()
	if _, err := e.store.Memberships().ByEmail(ctx, teamID, email); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("an invitation that failed left a membership: %v", err)
	}
	if len(e.mailer.Sent()) != 0 || len(e.events(t)) != 0 {
		t.Fatal("an invitation that failed left mail or events")
	}
}

func (e *env) member(t *testing.T, teamID, id string) team.Member {
	t.Helper()
	m, err := e.store.Memberships().ByID(ctx, teamID, id)
	if err != nil {
		t.Fatalf("membership %s: %v", id, err)
	}
	return m
}

func (e *env) events(t *testing.T) []event.Event {
	t.Helper()
	evs, err := e.store.Outbox().ListAfter(ctx, "", 100)
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	return evs
}

// invite invites email and returns the mailed token.
func (e *env) invite(t *testing.T, svc *teams.Service, actor team.Actor, email, role string) (teams.MemberView, string) {
	t.Helper()
	v, err := svc.Invite(ctx, actor, email, role)
	if err != nil {
		t.Fatalf("invite %s: %v", email, err)
	}
	tok, ok := e.mailer.TokenAfter("Invitation token: ")
	if !ok {
		t.Fatalf("no invitation token in the last mail of %+v", e.mailer.Sent())
	}
	return v, tok
}

// invitation is bob's invitation to ada's team, made before bob had an
// account, as a newcomer's is.
type invitation struct {
	view  teams.MemberView // the invited membership
	token string           // as mailed
	bob   team.Actor       // bob, signed in since, in no team yet
}

// inviteBob has owner invite bob@example.com as a member, then stores
// bob's account.
func (e *env) inviteBob(t *testing.T, owner team.Actor) invitation {
	t.Helper()
	v, tok := e.invite(t, e.service(), owner, "bob@example.com", "member")
	bob := e.user(t, "bob@example.com", "Bob")
	return invitation{view: v, token: tok, bob: team.Actor{UserID: bob.ID}}
}

// failure breaks one dependency of an env.
type failure struct {
	name string
	fail func(e *env)
}

// eachFailure runs test once per failure, in a subtest on a new env where
// ada owns her team; test calls fail once its own setup is done.
func eachFailure(t *testing.T, failures []failure, test func(t *testing.T, e *env, owner team.Actor, fail func())) {
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			e, owner := adaEnv(t)
			test(t, e, owner, func() { f.fail(e) })
		})
	}
}

func fieldsOf(t *testing.T, err error) string {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a domain error", err)
	}
	var f []string
	for _, fi := range de.Fields {
		f = append(f, fi.Field)
	}
	return strings.Join(f, ",")
}

func strp(s string) *string { return &s }

// failingInvitationCreate fails to store invitations, the last write of an
// invitation's unit before its event.
type failingInvitationCreate struct{ teamstore.Invitations }

func (failingInvitationCreate) Create(context.Context, team.Invitation) error { return apptest.ErrDown }

// failingMemberReads fails the membership reads it overrides.
type failingMemberReads struct{ teamstore.Memberships }

func (failingMemberReads) ListByUser(context.Context, string) ([]team.Member, error) {
	return nil, apptest.ErrDown
}

func (failingMemberReads) List(context.Context, string, string, int) ([]team.Member, error) {
	return nil, apptest.ErrDown
}

func (failingMemberReads) ByEmail(context.Context, string, string) (team.Member, error) {
	return team.Member{}, apptest.ErrDown
}

// countOnlyFails fails to count members.
type countOnlyFails struct{ teamstore.Memberships }

func (countOnlyFails) Count(context.Context, string) (int, int, error) { return 0, 0, apptest.ErrDown }

// failingMemberUpdate fails to change memberships.
type failingMemberUpdate struct{ teamstore.Memberships }

func (failingMemberUpdate) Update(context.Context, team.Member) error { return apptest.ErrDown }

// failingTeamReads fails ByID.
type failingTeamReads struct{ teamstore.Teams }

func (failingTeamReads) ByID(context.Context, string) (team.Team, error) {
	return team.Team{}, apptest.ErrDown
}

// racedInvitations lets another accept consume the invitation between
// this one's read and its Consume, inside the same unit, as a database
// without the team lock would allow.
type racedInvitations struct {
	teamstore.Invitations
	at time.Time
}

func (r racedInvitations) ByID(ctx context.Context, id string) (team.Invitation, error) {
	return apptest.ConsumedMeanwhile(ctx, id, r.at, r.Invitations.ByID, r.Invitations.Consume)
}

// lockRace commits another owner's change while this unit waits for the
// team's lock: when Lock returns, change has been applied.
type lockRace struct {
	teamstore.Teams
	change func(ctx context.Context) error
}

func (l lockRace) Lock(ctx context.Context, id string) error {
	if err := l.Teams.Lock(ctx, id); err != nil {
		return err
	}
	return l.change(ctx)
}
