// Package auth owns the account use cases: registration with a personal team,
// login with throttling, refresh-token rotation with reuse detection, password
// reset, API keys, and turning presented credentials into a team.Actor.
package auth

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

// Policy holds the lifetimes and throttling budgets of the auth use cases.
type Policy struct {
	RefreshTTL time.Duration
	ResetTTL   time.Duration
	// LoginAttemptsPerEmail and LoginAttemptsPerAddr are the login attempts
	// allowed per LoginWindow before further attempts answer 429. Every
	// attempt is counted before its password is verified, so no more than
	// these ever reach the hasher; a successful login forgets its email's
	// count (not its address's, or one's own account could reset it).
	LoginAttemptsPerEmail int
	LoginAttemptsPerAddr  int
	LoginWindow           time.Duration
	// ResetMailsPerEmail bounds reset mails per LoginWindow, so that the
	// forgot-password endpoint cannot be used to flood an inbox.
	ResetMailsPerEmail int
	// APIKeyCacheTTL bounds how long what a credential resolves to (a
	// verified API key, a session version, a membership) is trusted without
	// reading the store. Every change evicts it on every instance at once;
	// the TTL only bounds the harm of an invalidation that was not heard.
	APIKeyCacheTTL time.Duration
	// RegistrationsPerAddr bounds registrations per client address per
	// RegistrationWindow.
	RegistrationsPerAddr int
	RegistrationWindow   time.Duration
	// APIKeysPerUser bounds the keys one user holds in one team.
	APIKeysPerUser int
}

// DefaultPolicy is the policy of a production service.
func DefaultPolicy() Policy {
	return Policy{
		RefreshTTL:            30 * 24 * time.Hour,
		ResetTTL:              time.Hour,
		LoginAttemptsPerEmail: 5,
		LoginAttemptsPerAddr:  20,
		LoginWindow:           15 * time.Minute,
		ResetMailsPerEmail:    5,
		APIKeyCacheTTL:        time.Minute,
		RegistrationsPerAddr:  20,
		RegistrationWindow:    time.Hour,
		APIKeysPerUser:        20,
	}
}

// Deps are the ports the service needs.
type Deps struct {
	Tx            ports.UnitOfWork
	Users         accountstore.Users
	APIKeys       accountstore.APIKeys
	RefreshTokens accountstore.RefreshTokens
	ResetTokens   accountstore.ResetTokens
	Teams         Teams
	Memberships   Memberships
	Hasher        ports.PasswordHasher
	Tokens        ports.TokenIssuer
	Limiter       ports.RateLimiter
	Mailer        ports.Mailer
	// Notices carries invalidations of what credentials resolve to to
	// every instance, this one included.
	Notices ports.Notices
	Clock   ports.Clock
	IDs     ports.IDs
	Log     *slog.Logger
	Policy  Policy
	// ConsoleURL is the web console's base URL (PUBLIC_URL/app), known once
	// the server listens: a reset mail links to its page that takes the
	// token.
	ConsoleURL func() string
}

// Service runs the auth use cases.
type Service struct {
	d           Deps
	near        *nearCache
	unsubscribe func()
	// dummyHash is verified when the email is unknown, so that a wrong email
	// costs the same time as a wrong password. It is made by the first such
	// login, not at start: hashing takes the hasher's memory (19 MiB by
	// default), which an idle process would otherwise hold from its start.
	dummyMu   sync.Mutex
	dummyHash string
	// keyUses paces the writes of API keys' lastUsedAt.
	keyUses keyUses
}

// New returns the service, listening for invalidations until Close.
func New(ctx context.Context, d Deps) (*Service, error) {
	s := &Service{d: d, near: newNearCache(d.Policy.APIKeyCacheTTL, nearCapacity, d.Clock.Now)}
	s.unsubscribe = d.Notices.Subscribe(authTopic, s.near.hear)
	return s, nil
}

// Tokens is a freshly issued credential pair.
type Tokens struct {
	AccessToken  string
	RefreshToken string
	// ExpiresIn is the access token's lifetime in seconds.
	ExpiresIn int
}

// SignIn is what a successful register or login returns: the signed-in user
// and their tokens. (A browser session is profile.Session, a different thing.)
type SignIn struct {
	User   account.User
	Team   team.Team
	Role   team.Role
	Tokens Tokens
}

// RegisterInput is a new account's data.
type RegisterInput struct {
	Email    string
	Password string
	Name     string
	// ClientAddr is the caller's network address, used for throttling.
	ClientAddr string
}

// Register creates the user together with a personal team they own. The
// cheap checks (the fields, the address's budget, an email already taken)
// come before the password is hashed, so that refused registrations cost
// no hashing.
func (s *Service) Register(ctx context.Context, in RegisterInput) (SignIn, error) {
	var v domain.Validation
	if err := account.ValidatePassword(in.Password, s.d.Hasher.MaxBytes()); err != nil {
		v.Add("password", issueOf(err))
	}
	now := s.d.Clock.Now().UTC()
	teamID := s.d.IDs.New("team")
	u, err := account.NewUser(s.d.IDs.New("usr"), in.Email, in.Name, "", teamID, now)
	if err != nil {
		for _, f := range fieldsOf(err) {
			v.Add(f.Field, f.Issue)
		}
	}
	if err := v.Err(); err != nil {
		return SignIn{}, err
	}
	if err := s.throttle(ctx, "too many registrations from this address; try again later", s.d.Policy.RegistrationWindow,
		budget{"register:addr:" + in.ClientAddr, s.d.Policy.RegistrationsPerAddr}); err != nil {
		return SignIn{}, err
	}
	switch _, err := s.d.Users.ByEmail(ctx, u.Email); {
	case err == nil:
		return SignIn{}, errEmailTaken
	case !domain.IsKind(err, domain.KindNotFound):
		return SignIn{}, err
	}
	t, err := team.NewTeam(teamID, personalTeamName(u.Name), now)
	if err != nil {
		return SignIn{}, err
	}
	if u.PasswordHash, err = s.d.Hasher.Hash(ctx, in.Password); err != nil {
		return SignIn{}, err
	}
	owner := team.NewOwner(s.d.IDs.New("mem"), t.ID, u.ID, u.Email, now)
	var tokens Tokens
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.Users.Create(ctx, u); err != nil {
			if domain.IsKind(err, domain.KindConflict) {
				return errEmailTaken
			}
			return err
		}
		if err := s.d.Teams.Create(ctx, t); err != nil {
			return err
		}
		if err := s.d.Memberships.Create(ctx, owner); err != nil {
			return err
		}
		var err error
		tokens, err = s.issue(ctx, u, t.ID, s.d.IDs.New("rtf"), now)
		return err
	})
	if err != nil {
		return SignIn{}, err
	}
	return SignIn{User: u, Team: t, Role: team.RoleOwner, Tokens: tokens}, nil
}

var errEmailTaken = domain.Conflict("an account with this email already exists")

// budget is one rate-limited key and its limit.
type budget struct {
	key   string
	limit int
}

// throttle counts one attempt against every budget, atomically, before the
// attempt does any work, and refuses it with the longest wait when any
// budget is spent. Counting first means concurrent attempts cannot all pass
// a check made before any of them was counted.
func (s *Service) throttle(ctx context.Context, msg string, window time.Duration, budgets ...budget) error {
	var wait time.Duration
	for _, b := range budgets {
		dec, err := s.d.Limiter.Hit(ctx, b.key, b.limit, window)
		if err != nil {
			return err
		}
		if !dec.Allowed {
			wait = max(wait, dec.RetryAfter, time.Second)
		}
	}
	if wait > 0 {
		return domain.RateLimited(msg, wait)
	}
	return nil
}

func personalTeamName(userName string) string {
	const suffix = "'s team"
	r := []rune(userName)
	if len(r) > 190 {
		r = r[:190]
	}
	return string(r) + suffix
}

// LoginInput is a sign-in attempt. ClientAddr is the caller's network address,
// used for throttling.
type LoginInput struct {
	Email      string
	Password   string
	ClientAddr string
}

var errBadCredentials = domain.Unauthorized("invalid email or password")

// Login checks the password and issues tokens. Wrong email and wrong password
// answer alike; attempts beyond the budget per email or per address answer
// 429 without the password being verified.
func (s *Service) Login(ctx context.Context, in LoginInput) (SignIn, error) {
	email := account.NormalizeEmail(in.Email)
	// Both are bounded before the email becomes a throttling key or the
	// password reaches the hasher; no account has a longer email.
	var v domain.Validation
	if len(email) > account.MaxEmailBytes {
		v.Add("email", "must be at most "+strconv.Itoa(account.MaxEmailBytes)+" bytes")
	}
	if len(in.Password) > s.d.Hasher.MaxBytes() {
		v.Add("password", "must be at most "+strconv.Itoa(s.d.Hasher.MaxBytes())+" bytes")
	}
	if err := v.Err(); err != nil {
		return SignIn{}, err
	}
	emailKey := "login:email:" + email
	if err := s.throttle(ctx, "too many login attempts; try again later", s.d.Policy.LoginWindow,
		budget{emailKey, s.d.Policy.LoginAttemptsPerEmail},
		budget{"login:addr:" + in.ClientAddr, s.d.Policy.LoginAttemptsPerAddr}); err != nil {
		return SignIn{}, err
	}
	u, err := s.d.Users.ByEmail(ctx, email)
	if domain.IsKind(err, domain.KindNotFound) {
		if err := s.spendAVerify(ctx, in.Password); err != nil {
			return SignIn{}, err
		}
		return SignIn{}, errBadCredentials
	}
	if err != nil {
		return SignIn{}, err
	}
	ok, err := s.d.Hasher.Verify(ctx, u.PasswordHash, in.Password)
	if err != nil {
		return SignIn{}, err
	}
	if !ok {
		return SignIn{}, errBadCredentials
	}
	if err := s.d.Limiter.Reset(ctx, emailKey, s.d.Policy.LoginWindow); err != nil {
		return SignIn{}, err
	}
	return s.signIn(ctx, u, s.d.IDs.New("rtf"))
}

// spendAVerify takes the time a password check takes, for an unknown email:
// it verifies password against the dummy hash, or, the first time, makes
// the dummy hash from it (hashing costs what verifying does).
func (s *Service) spendAVerify(ctx context.Context, password string) error {
	s.dummyMu.Lock()
	h := s.dummyHash
	s.dummyMu.Unlock()
	if h != "" {
		_, err := s.d.Hasher.Verify(ctx, h, password)
		return err
	}
	h, err := s.d.Hasher.Hash(ctx, password)
	if err != nil {
		return err
	}
	s.dummyMu.Lock()
	s.dummyHash = h
	s.dummyMu.Unlock()
	return nil
}

func (s *Service) signIn(ctx context.Context, u account.User, familyID string) (SignIn, error) {
	now := s.d.Clock.Now().UTC()
	var out SignIn
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		t, m, err := s.activeTeam(ctx, u)
		if err != nil {
			return err
		}
		tokens, err := s.issue(ctx, u, t.ID, familyID, now)
		if err != nil {
			return err
		}
		out = SignIn{User: u, Team: t, Role: m.Role, Tokens: tokens}
		return nil
	})
	return out, err
}

// activeTeam is the team a sign-in acts in: the user's default team while
// they are an active member of it, else the team of their oldest active
// membership. A user removed from every team cannot sign in.
func (s *Service) activeTeam(ctx context.Context, u account.User) (team.Team, team.Member, error) {
	m, err := s.d.Memberships.ByUser(ctx, u.DefaultTeamID, u.ID)
	switch {
	case err == nil && m.Status == team.StatusActive:
	case err != nil && !domain.IsKind(err, domain.KindNotFound):
		return team.Team{}, team.Member{}, err
	default:
		ms, err := s.d.Memberships.ListByUser(ctx, u.ID)
		if err != nil {
			return team.Team{}, team.Member{}, err
		}
		i := slices.IndexFunc(ms, func(m team.Member) bool { return m.Status == team.StatusActive })
		if i < 0 {
			return team.Team{}, team.Member{}, domain.Forbidden("this account is not an active member of any team")
		}
		m = ms[i]
	}
	t, err := s.d.Teams.ByID(ctx, m.TeamID)
	return t, m, err
}

// issue signs an access token for teamID and stores the next refresh token
// of familyID.
func (s *Service) issue(ctx context.Context, u account.User, teamID, familyID string, now time.Time) (Tokens, error) {
	access, claims, err := s.d.Tokens.Issue(ports.AccessClaims{UserID: u.ID, TeamID: teamID, SessionVersion: u.SessionVersion})
	if err != nil {
		return Tokens{}, err
	}
	secret := account.NewSecret(32)
	rt := account.RefreshToken{
		ID: s.d.IDs.New("rt"), FamilyID: familyID, UserID: u.ID, TeamID: teamID,
		Hash: account.Digest(secret), IssuedAt: now, ExpiresAt: now.Add(s.d.Policy.RefreshTTL),
	}
	if err := s.d.RefreshTokens.Create(ctx, rt); err != nil {
		return Tokens{}, err
	}
	return Tokens{
		AccessToken:  access,
		RefreshToken: rt.ID + "." + secret,
		ExpiresIn:    int(claims.ExpiresAt.Sub(claims.IssuedAt).Round(time.Second) / time.Second),
	}, nil
}

var errBadRefresh = domain.Unauthorized("invalid, expired or revoked refresh token")

// Refresh exchanges a refresh token for a new pair. Each refresh token is
// single-use: presenting one that was already used revokes its whole family,
// since either the client or a thief holds a copy.
func (s *Service) Refresh(ctx context.Context, refreshToken string) (SignIn, error) {
	id, secret, ok := account.SplitToken(refreshToken)
	if !ok {
		return SignIn{}, errBadRefresh
	}
	rt, err := s.d.RefreshTokens.ByID(ctx, id)
	if domain.IsKind(err, domain.KindNotFound) {
		return SignIn{}, errBadRefresh
	}
	if err != nil {
		return SignIn{}, err
	}
	if !account.SecretMatches(rt.Hash, secret) {
		return SignIn{}, errBadRefresh
	}
	now := s.d.Clock.Now().UTC()
	if rt.RevokedAt != nil || !now.Before(rt.ExpiresAt) {
		return SignIn{}, errBadRefresh
	}
	if rt.UsedAt != nil {
		return SignIn{}, s.revokeReused(ctx, rt, now)
	}
	var out SignIn
	reused := false
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		won, err := s.d.RefreshTokens.Consume(ctx, rt.ID, now)
		if err != nil {
			return err
		}
		if !won {
			reused = true
			return errBadRefresh
		}
		u, err := s.d.Users.ByID(ctx, rt.UserID)
		if err != nil {
			return err
		}
		t, m, err := s.activeTeam(ctx, u)
		if err != nil {
			return err
		}
		tokens, err := s.issue(ctx, u, t.ID, rt.FamilyID, now)
		if err != nil {
			return err
		}
		out = SignIn{User: u, Team: t, Role: m.Role, Tokens: tokens}
		return nil
	})
	if reused {
		return SignIn{}, s.revokeReused(ctx, rt, now)
	}
	return out, err
}

// revokeReused commits the family's revocation before answering, so that the
// refusal cannot be rolled back with the request. Whoever holds the copy may
// also hold an access token of the family, so every access token of the
// user issued until now is cut off too; the user's other devices refresh.
func (s *Service) revokeReused(ctx context.Context, rt account.RefreshToken, now time.Time) error {
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.RefreshTokens.RevokeFamily(ctx, rt.FamilyID, now); err != nil {
			return err
		}
		_, err := s.d.Users.EndSessions(ctx, rt.UserID, now)
		return err
	})
	if err != nil {
		return err
	}
	s.changed(ctx, userTag(rt.UserID))
	s.d.Log.WarnContext(ctx, "refresh token reused; family revoked", "user_id", rt.UserID, "family_id", rt.FamilyID)
	return domain.Unauthorized("refresh token was already used; all sessions of this sign-in are revoked")
}

// ForgotPassword mails a single-use reset token when the email belongs to an
// account. It answers the same whether or not it does.
func (s *Service) ForgotPassword(ctx context.Context, email string) error {
	email = account.NormalizeEmail(email)
	if err := account.ValidateEmail(email); err != nil {
		return err
	}
	dec, err := s.d.Limiter.Hit(ctx, "reset:email:"+email, s.d.Policy.ResetMailsPerEmail, s.d.Policy.LoginWindow)
	if err != nil {
		return err
	}
	if !dec.Allowed {
		return nil
	}
	u, err := s.d.Users.ByEmail(ctx, email)
	if domain.IsKind(err, domain.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := s.d.Clock.Now().UTC()
	secret := account.NewSecret(32)
	t := account.ResetToken{ID: s.d.IDs.New("rst"), UserID: u.ID, Hash: account.Digest(secret), CreatedAt: now, ExpiresAt: now.Add(s.d.Policy.ResetTTL)}
	if err := s.d.ResetTokens.Create(ctx, t); err != nil {
		return err
	}
	token := t.ID + "." + secret
	msg := ports.Mail{
		To:      u.Email,
		Subject: "Reset your profilesvc password",
		Text: "Someone asked to reset the password of this account.\n\n" +
			"Choose a new password at " + s.d.ConsoleURL() + "/reset-password?token=" + token + "\n" +
			"or POST the token with a new password to /api/v1/auth/reset-password.\n\n" +
			"Reset token: " + token + "\n\n" +
			"Either works within " + s.d.Policy.ResetTTL.String() + ".\n" +
			"If you did not ask for this, ignore this message.\n",
	}
	if err := s.d.Mailer.Send(ctx, msg); err != nil {
		// The answer must not reveal that the account exists, so the failure
		// is only logged.
		s.d.Log.ErrorContext(ctx, "sending password reset mail failed", "user_id", u.ID, "error", err.Error())
	}
	return nil
}

var errBadReset = domain.Invalid("token", "is invalid, expired or already used")

// ResetPassword sets a new password with a reset token and cuts off every
// credential the old password could have produced: refresh tokens, access
// tokens issued until now, the user's other reset tokens and API keys. A
// mail tells the user what was revoked.
func (s *Service) ResetPassword(ctx context.Context, token, password string) error {
	if err := account.ValidatePassword(password, s.d.Hasher.MaxBytes()); err != nil {
		return err
	}
	id, secret, ok := account.SplitToken(token)
	if !ok {
		return errBadReset
	}
	rt, err := s.d.ResetTokens.ByID(ctx, id)
	if domain.IsKind(err, domain.KindNotFound) {
		return errBadReset
	}
	if err != nil {
		return err
	}
	now := s.d.Clock.Now().UTC()
	if !rt.Redeemable(secret, now) {
		return errBadReset
	}
	hash, err := s.d.Hasher.Hash(ctx, password)
	if err != nil {
		return err
	}
	var keys []string
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		won, err := s.d.ResetTokens.Consume(ctx, rt.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return errBadReset
		}
		if err := s.d.ResetTokens.ConsumeUser(ctx, rt.UserID, now); err != nil {
			return err
		}
		if err := s.d.Users.UpdatePassword(ctx, rt.UserID, hash, now); err != nil {
			return err
		}
		if _, err := s.d.Users.EndSessions(ctx, rt.UserID, now); err != nil {
			return err
		}
		if keys, err = s.d.APIKeys.DeleteByUser(ctx, rt.UserID); err != nil {
			return err
		}
		return s.d.RefreshTokens.RevokeUser(ctx, rt.UserID, now)
	})
	if err != nil {
		return err
	}
	// The user's tag covers their sessions and every key of theirs.
	s.changed(ctx, userTag(rt.UserID))
	s.mailPasswordChanged(ctx, rt.UserID, len(keys))
	return nil
}

// mailPasswordChanged tells the user what the reset revoked. The password
// is changed whatever happens to the mail, so a failure is only logged.
func (s *Service) mailPasswordChanged(ctx context.Context, userID string, keys int) {
	u, err := s.d.Users.ByID(ctx, userID)
	if err == nil {
		err = s.d.Mailer.Send(ctx, ports.Mail{
			To:      u.Email,
			Subject: "Your profilesvc password was changed",
			Text: "The password of this account was just changed with a reset token.\n\n" +
				"Every session was signed out: access and refresh tokens issued before the change no longer work.\n" +
				"All API keys of this account were revoked (" + strconv.Itoa(keys) + "); create new ones.\n" +
				"If you did not do this, reset your password again at once.\n",
		})
	}
	if err != nil {
		s.d.Log.ErrorContext(ctx, "sending password changed mail failed", "user_id", userID, "error", err.Error())
	}
}

func fieldsOf(err error) []domain.FieldIssue {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Fields
	}
	return nil
}

func issueOf(err error) string {
	if f := fieldsOf(err); len(f) > 0 {
		return f[0].Issue
	}
	return err.Error()
}
