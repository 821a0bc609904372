package auth_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/notices"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/adapters/token"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

var (
	ctx   = context.Background()
	start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

// apptest.ErrDown is what a failing fake answers.

const accessTTL = 15 * time.Minute

// env is one service over the memory store. Tests replace single
// dependencies in deps (a failing or racing repository, a failing port)
// before calling service.
type env struct {
	store   *memory.Store
	clock   *clock.Fake
	hasher  *hasher
	limiter *limiter
	mailer  *apptest.Mailer
	notices *notices.Local
	logs    *apptest.Logs
	deps    auth.Deps
}

func newEnv() *env {
	s := memory.New()
	c := clock.NewFake(start)
	ids := apptest.NewIDs()
	e := &env{
		store:   s,
		clock:   c,
		hasher:  &hasher{},
		limiter: &limiter{hits: map[string]int{}, deny: map[string]time.Duration{}},
		mailer:  &apptest.Mailer{},
		notices: notices.NewLocal(),
		logs:    &apptest.Logs{},
	}
	e.deps = auth.Deps{
		Tx:            unit.New(s, nil),
		Users:         s.Users(),
		APIKeys:       s.APIKeys(),
		RefreshTokens: s.RefreshTokens(),
		ResetTokens:   s.ResetTokens(),
		Teams:         s.Teams(),
		Memberships:   s.Memberships(),
		Hasher:        e.hasher,
		Tokens:        token.NewJWT([]byte("a fixed key for the auth tests only"), "profilesvc-test", accessTTL, c, ids),
		Limiter:       e.limiter,
		Mailer:        e.mailer,
		Notices:       e.notices,
		Clock:         c,
		IDs:           ids,
		Log:           e.logs.Logger(),
		Policy:        auth.DefaultPolicy(),
		ConsoleURL:    func() string { return "https://console.test/app" },
	}
	return e
}

func (e *env) service(t *testing.T) *auth.Service {
	t.Helper()
	svc, err := auth.New(ctx, e.deps)
	if err != nil {
		t.Fatalf("new service: %v", err)
	}
	return svc
}

// adaRegistered returns a new env, its service, and ada's registration
// through it.
func adaRegistered(t *testing.T) (*env, *auth.Service, auth.SignIn) {
	t.Helper()
	e := newEnv()
	svc := e.service(t)
	return e, svc, register(t, svc, "ada@example.com")
}

// register makes an account through the service, the way a client does.
func register(t *testing.T, svc *auth.Service, email string) auth.SignIn {
	t.Helper()
	in, err := svc.Register(ctx, auth.RegisterInput{Email: email, Password: "correct horse battery", Name: "Ada"})
	if err != nil {
		t.Fatalf("register %s: %v", email, err)
	}
	return in
}

// join makes u an active member of teamID with role, as an accepted
// invitation would.
func (e *env) join(t *testing.T, teamID string, u account.User, role team.Role) team.Member {
	t.Helper()
	m := team.NewInvited("mem_"+u.ID+"_"+teamID, teamID, u.ID, u.Email, role, start)
	if err := e.store.Memberships().Create(ctx, m); err != nil {
		t.Fatalf("create membership: %v", err)
	}
	m, err := m.Accept(u.ID, start)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	if err := e.store.Memberships().Update(ctx, m); err != nil {
		t.Fatalf("activate membership: %v", err)
	}
	return m
}

// setStatus changes a membership's status underneath the service.
func (e *env) setStatus(t *testing.T, teamID, userID string, st team.Status) {
	t.Helper()
	m, err := e.store.Memberships().ByUser(ctx, teamID, userID)
	if err != nil {
		t.Fatalf("membership: %v", err)
	}
	m.Status = st
	if err := e.store.Memberships().Update(ctx, m); err != nil {
		t.Fatalf("update membership: %v", err)
	}
}

// failure breaks one dependency of an env.
type failure struct {
	name string
	fail func(e *env)
}

// eachFailure runs test once per failure, in a subtest on a new env where
// ada has registered before the failure broke the env.
func eachFailure(t *testing.T, failures []failure, test func(t *testing.T, e *env, ada auth.SignIn)) {
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv()
			ada := register(t, e.service(t), "ada@example.com")
			f.fail(e)
			test(t, e, ada)
		})
	}
}

func asDomain(t *testing.T, err error) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a domain error", err)
	}
	return de
}

// hasher is fast and deterministic and counts verifications.
type hasher struct {
	hashes   atomic.Int64
	verifies atomic.Int64
	// gate, when set, is called by Verify before it answers.
	gate      func()
	hashErr   error
	verifyErr error
}

func (h *hasher) Hash(_ context.Context, password string) (string, error) {
	h.hashes.Add(1)
	if h.hashErr != nil {
		return "", h.hashErr
	}
	return "hash:" + password, nil
}

func (h *hasher) Verify(_ context.Context, hash, password string) (bool, error) {
	h.verifies.Add(1)
	if h.gate != nil {
		h.gate()
	}
	if h.verifyErr != nil {
		return false, h.verifyErr
	}
	return hash == "hash:"+password, nil
}

func (h *hasher) MaxBytes() int { return 64 }

// limiter counts hits per key; a key in deny is refused with its wait.
type limiter struct {
	mu   sync.Mutex
	hits map[string]int
	deny map[string]time.Duration
	err  error
}

func (l *limiter) decide(key string, used, limit int, window time.Duration) ports.Decision {
	if wait, ok := l.deny[key]; ok {
		return ports.Decision{RetryAfter: wait}
	}
	if used > limit {
		return ports.Decision{RetryAfter: window}
	}
	return ports.Decision{Allowed: true, Remaining: limit - used}
}

func (l *limiter) Hit(_ context.Context, key string, limit int, window time.Duration) (ports.Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return ports.Decision{}, l.err
	}
	l.hits[key]++
	return l.decide(key, l.hits[key], limit, window), nil
}

func (l *limiter) Check(_ context.Context, key string, limit int, window time.Duration) (ports.Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return ports.Decision{}, l.err
	}
	return l.decide(key, l.hits[key]+1, limit, window), nil
}

func (l *limiter) Reset(_ context.Context, key string, _ time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	delete(l.hits, key)
	return nil
}

func (l *limiter) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hits[key]
}

// failingPublish loses every notice it is asked to publish: an instance
// cut off from the others.
type failingPublish struct{ ports.Notices }

func (failingPublish) Publish(context.Context, string, string) error { return apptest.ErrDown }

// failingMemberships fails Create, halfway through a registration's unit.
type failingMemberships struct{ auth.Memberships }

func (failingMemberships) Create(context.Context, team.Member) error { return apptest.ErrDown }

// failingByUser fails to read memberships.
type failingByUser struct{ auth.Memberships }

func (failingByUser) ByUser(context.Context, string, string) (team.Member, error) {
	return team.Member{}, apptest.ErrDown
}

// failingTeams fails Create.
type failingTeams struct{ auth.Teams }

func (failingTeams) Create(context.Context, team.Team) error { return apptest.ErrDown }

// failingUserReads fails ByEmail and ByID.
type failingUserReads struct{ accountstore.Users }

func (failingUserReads) ByEmail(context.Context, string) (account.User, error) {
	return account.User{}, apptest.ErrDown
}

func (failingUserReads) ByID(context.Context, string) (account.User, error) {
	return account.User{}, apptest.ErrDown
}

// failingPasswordUpdate fails UpdatePassword, after the reset token was
// consumed in the same unit.
type failingPasswordUpdate struct{ accountstore.Users }

func (failingPasswordUpdate) UpdatePassword(context.Context, string, string, time.Time) error {
	return apptest.ErrDown
}

// failingRefreshCreate fails to store a refresh token.
type failingRefreshCreate struct{ accountstore.RefreshTokens }

func (failingRefreshCreate) Create(context.Context, account.RefreshToken) error {
	return apptest.ErrDown
}

// failingRefreshReads fails ByID.
type failingRefreshReads struct{ accountstore.RefreshTokens }

func (failingRefreshReads) ByID(context.Context, string) (account.RefreshToken, error) {
	return account.RefreshToken{}, apptest.ErrDown
}

// racedRefreshTokens lets another request consume the token between the
// service's read and its Consume: ByID returns the row as it was, then
// the other request's Consume commits.
type racedRefreshTokens struct {
	accountstore.RefreshTokens
	at time.Time
}

func (r racedRefreshTokens) ByID(ctx context.Context, id string) (account.RefreshToken, error) {
	return apptest.ConsumedMeanwhile(ctx, id, r.at, r.RefreshTokens.ByID, r.RefreshTokens.Consume)
}

// racedResetTokens lets another reset consume the token between the
// service's read and its Consume.
type racedResetTokens struct {
	accountstore.ResetTokens
	at time.Time
}

func (r racedResetTokens) ByID(ctx context.Context, id string) (account.ResetToken, error) {
	return apptest.ConsumedMeanwhile(ctx, id, r.at, r.ResetTokens.ByID, r.ResetTokens.Consume)
}

// failingResetCreate fails to store a reset token.
type failingResetCreate struct{ accountstore.ResetTokens }

func (failingResetCreate) Create(context.Context, account.ResetToken) error { return apptest.ErrDown }

// countingAPIKeys counts the store reads of keys.
type countingAPIKeys struct {
	accountstore.APIKeys
	reads *atomic.Int64
}

// countKeyReads makes the service's key store count its reads.
func (e *env) countKeyReads() *atomic.Int64 {
	reads := &atomic.Int64{}
	e.deps.APIKeys = countingAPIKeys{APIKeys: e.deps.APIKeys, reads: reads}
	return reads
}

func (k countingAPIKeys) ByID(ctx context.Context, id string) (account.APIKey, error) {
	k.reads.Add(1)
	return k.APIKeys.ByID(ctx, id)
}

// failingAPIKeys fails every read and write it overrides.
type failingAPIKeys struct{ accountstore.APIKeys }

func (failingAPIKeys) ByID(context.Context, string) (account.APIKey, error) {
	return account.APIKey{}, apptest.ErrDown
}

func (failingAPIKeys) Create(context.Context, account.APIKey) error { return apptest.ErrDown }

func (failingAPIKeys) ListByUser(context.Context, string, string) ([]account.APIKey, error) {
	return nil, apptest.ErrDown
}

// failingIssuer refuses to sign.
type failingIssuer struct{ ports.TokenIssuer }

func (failingIssuer) Issue(ports.AccessClaims) (string, ports.AccessClaims, error) {
	return "", ports.AccessClaims{}, apptest.ErrDown
}

// countingUsers counts the store reads of users by id.
type countingUsers struct {
	accountstore.Users
	reads *atomic.Int64
}

func (u countingUsers) ByID(ctx context.Context, id string) (account.User, error) {
	u.reads.Add(1)
	return u.Users.ByID(ctx, id)
}

// countMemberReads makes the env count membership reads by user.
func (e *env) countMemberReads() *atomic.Int64 {
	reads := &atomic.Int64{}
	e.deps.Memberships = countingMemberships{Memberships: e.deps.Memberships, reads: reads}
	return reads
}

type countingMemberships struct {
	auth.Memberships
	reads *atomic.Int64
}

func (m countingMemberships) ByUser(ctx context.Context, teamID, userID string) (team.Member, error) {
	m.reads.Add(1)
	return m.Memberships.ByUser(ctx, teamID, userID)
}

// switchedNotices is in-process notices whose test can also tell the
// subscribers that the transport went deaf or is heard again.
type switchedNotices struct {
	*notices.Local
	mu   sync.Mutex
	subs []func(ports.Notice)
}

func (n *switchedNotices) Subscribe(topic string, h func(ports.Notice)) func() {
	n.mu.Lock()
	n.subs = append(n.subs, h)
	n.mu.Unlock()
	return n.Local.Subscribe(topic, h)
}

func (n *switchedNotices) tell(no ports.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.subs {
		h(no)
	}
}
