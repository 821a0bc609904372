package auth

import (
	"context"
	"strconv"
	"strings"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
)

// Credentials are what a request presents: a bearer access token, an API
// key or a dashboard session, and optionally the team it wants to act in.
type Credentials struct {
	BearerToken string
	APIKey      string
	// SessionToken is the dashboard's session cookie; only the web console
	// presents it, never with the others.
	SessionToken string
	TeamID       string
}

var errNoCredentials = domain.Unauthorized("authentication required: send Authorization: Bearer <token> or X-API-Key")
var errBadAPIKey = domain.Unauthorized("invalid API key")
var errRevokedToken = domain.Unauthorized("access token was revoked (password reset or sign-out of every session); sign in again")

// Authenticate turns credentials into the actor of a request: the user, the
// team they act in (the token's default team, the key's team, or X-Team-ID)
// and their role there. A team the user is not an active member of is not
// found, so its existence is not revealed.
//
// What a credential resolves to is kept in the near cache, so a warm
// request costs one lookup in process memory and no round trip; every
// change to it (sessions ended, key deleted, membership changed) is heard
// by every instance and evicts it.
func (s *Service) Authenticate(ctx context.Context, c Credentials) (team.Actor, error) {
	switch {
	case c.SessionToken != "":
		if c.BearerToken != "" || c.APIKey != "" {
			return team.Actor{}, domain.Unauthorized("a dashboard session is presented alone")
		}
		return s.authenticateSession(ctx, c)
	case c.BearerToken != "" && c.APIKey != "":
		return team.Actor{}, domain.Unauthorized("send either a bearer token or an API key, not both")
	case strings.HasPrefix(c.BearerToken, apiKeyPrefix):
		// A common slip: the key in the place of an access token.
		return team.Actor{}, domain.Unauthorized("this is an API key: send it in the X-API-Key header; Authorization: Bearer takes an access token from /api/v1/auth/login")
	case c.BearerToken != "":
		return s.authenticateBearer(ctx, c)
	case c.APIKey != "":
		return s.authenticateKey(ctx, c)
	default:
		return team.Actor{}, errNoCredentials
	}
}

func (s *Service) authenticateBearer(ctx context.Context, c Credentials) (team.Actor, error) {
	claims, err := s.d.Tokens.Verify(c.BearerToken)
	if err != nil {
		return team.Actor{}, err
	}
	teamID := claims.TeamID
	if c.TeamID != "" {
		teamID = c.TeamID
	}
	entry := bearerEntry(claims.UserID, teamID)
	ac, hit := s.near.get(entry)
	if !hit {
		gen := s.near.generation()
		if ac, err = s.bearerContext(ctx, claims.UserID, teamID, claims.SessionVersion); err != nil {
			return team.Actor{}, err
		}
		s.near.put(gen, entry, ac)
	}
	if claims.SessionVersion < ac.SessionVersion {
		return team.Actor{}, errRevokedToken
	}
	return team.Actor{UserID: ac.UserID, TeamID: ac.TeamID, MemberID: ac.MemberID, Role: ac.Role}, nil
}

// bearerContext reads what a bearer of the user resolves to in the team.
func (s *Service) bearerContext(ctx context.Context, userID, teamID string, presented int) (authContext, error) {
	u, err := s.d.Users.ByID(ctx, userID)
	if domain.IsKind(err, domain.KindNotFound) {
		return authContext{}, errRevokedToken
	}
	if err != nil {
		return authContext{}, err
	}
	// A revoked token is refused before its team is looked at, so that it
	// learns nothing of the team.
	if presented < u.SessionVersion {
		return authContext{}, errRevokedToken
	}
	m, err := s.activeMembership(ctx, teamID, userID)
	if err != nil {
		if domain.IsKind(err, domain.KindNotFound) {
			return authContext{}, domain.NotFound("team")
		}
		return authContext{}, err
	}
	return authContext{UserID: userID, TeamID: teamID, SessionVersion: u.SessionVersion, MemberID: m.ID, Role: m.Role}, nil
}

func (s *Service) authenticateKey(ctx context.Context, c Credentials) (team.Actor, error) {
	id, secret, ok := parseAPIKey(c.APIKey)
	if !ok {
		return team.Actor{}, errBadAPIKey
	}
	entry := keyEntry(id)
	ac, hit := s.near.get(entry)
	if !hit {
		gen := s.near.generation()
		var err error
		if ac, err = s.keyContext(ctx, id, secret); err != nil {
			return team.Actor{}, err
		}
		s.near.put(gen, entry, ac)
	}
	if !account.SecretMatches(ac.KeyHash, secret) {
		return team.Actor{}, errBadAPIKey
	}
	// A key is bound to its team: it cannot be pointed at another one.
	if c.TeamID != "" && c.TeamID != ac.TeamID {
		return team.Actor{}, domain.NotFound("team")
	}
	s.recordKeyUse(ctx, ac.KeyID)
	return team.Actor{UserID: ac.UserID, TeamID: ac.TeamID, MemberID: ac.MemberID, Role: ac.Role, APIKeyID: ac.KeyID}, nil
}

// keyContext reads what a key resolves to. The secret is checked before
// the membership is read, so a forged secret costs one read.
func (s *Service) keyContext(ctx context.Context, id, secret string) (authContext, error) {
	k, err := s.d.APIKeys.ByID(ctx, id)
	if domain.IsKind(err, domain.KindNotFound) {
		return authContext{}, errBadAPIKey
	}
	if err != nil {
		return authContext{}, err
	}
	if !account.SecretMatches(k.Hash, secret) {
		return authContext{}, errBadAPIKey
	}
	m, err := s.activeMembership(ctx, k.TeamID, k.UserID)
	if err != nil {
		if domain.IsKind(err, domain.KindNotFound) {
			// A key lives only as long as its membership: one whose
			// membership ended is a revoked credential, not a team the
			// caller may not see.
			return authContext{}, errBadAPIKey
		}
		return authContext{}, err
	}
	return authContext{KeyID: k.ID, KeyHash: k.Hash, UserID: k.UserID, TeamID: k.TeamID, MemberID: m.ID, Role: m.Role}, nil
}

// activeMembership is the user's membership of the team, not found unless
// active.
func (s *Service) activeMembership(ctx context.Context, teamID, userID string) (team.Member, error) {
	m, err := s.d.Memberships.ByUser(ctx, teamID, userID)
	if err != nil {
		return team.Member{}, err
	}
	if m.Status != team.StatusActive {
		return team.Member{}, domain.NotFound("membership")
	}
	return m, nil
}

const apiKeyPrefix = "psvc_"

// parseAPIKey splits "psvc_<id>_<secret>" into the key id ("key_<id>") and
// the secret.
func parseAPIKey(s string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(s, apiKeyPrefix)
	if !found || len(s) > 200 {
		return "", "", false
	}
	idPart, secret, found := strings.Cut(rest, "_")
	if !found || idPart == "" || len(secret) != 64 {
		return "", "", false
	}
	return "key_" + idPart, secret, true
}

// NewAPIKey is a created key; Key is the only time the secret is shown.
type NewAPIKey struct {
	APIKey account.APIKey
	Key    string
}

// CreateAPIKey makes a key for the actor in the actor's team. It acts with
// the actor's role for as long as the membership lasts.
func (s *Service) CreateAPIKey(ctx context.Context, actor team.Actor, name string) (NewAPIKey, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return NewAPIKey{}, err
	}
	id := s.d.IDs.New("key")
	idPart := strings.TrimPrefix(id, "key_")
	secret := account.NewSecret(32)
	k, err := account.NewAPIKey(id, actor.TeamID, actor.UserID, name, apiKeyPrefix+idPart, secret, s.d.Clock.Now())
	if err != nil {
		return NewAPIKey{}, err
	}
	// The team's lock makes the count and the insert one step, so that
	// concurrent creations cannot together pass the quota.
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.Teams.Lock(ctx, actor.TeamID); err != nil {
			return err
		}
		held, err := s.d.APIKeys.ListByUser(ctx, actor.TeamID, actor.UserID)
		if err != nil {
			return err
		}
		if len(held) >= s.d.Policy.APIKeysPerUser {
			q := strconv.Itoa(s.d.Policy.APIKeysPerUser)
			return domain.Invalid("name", "quota reached: a user holds at most "+q+" API keys in a team; delete one first")
		}
		return s.d.APIKeys.Create(ctx, k)
	})
	if err != nil {
		return NewAPIKey{}, err
	}
	return NewAPIKey{APIKey: k, Key: apiKeyPrefix + idPart + "_" + secret}, nil
}

// ListAPIKeys lists the actor's own keys in the actor's team, newest first.
// cursor is the id of the last key of the previous page.
func (s *Service) ListAPIKeys(ctx context.Context, actor team.Actor, limit int, cursor string) (paging.Page[account.APIKey], error) {
	if err := actor.Require(team.ActRead); err != nil {
		return paging.Page[account.APIKey]{}, err
	}
	keys, err := s.d.APIKeys.ListByUser(ctx, actor.TeamID, actor.UserID)
	if err != nil {
		return paging.Page[account.APIKey]{}, err
	}
	start := 0
	if cursor != "" {
		start = len(keys)
		for i, k := range keys {
			if k.ID < cursor {
				start = i
				break
			}
		}
	}
	return paging.Cut(keys[start:], limit, func(k account.APIKey) string { return k.ID }), nil
}

// DeleteAPIKey deletes a key of the actor's team: one's own, or anyone's for
// roles that administer the team.
func (s *Service) DeleteAPIKey(ctx context.Context, actor team.Actor, id string) error {
	if err := actor.Require(team.ActRead); err != nil {
		return err
	}
	k, err := s.d.APIKeys.ByID(ctx, id)
	if err != nil || k.TeamID != actor.TeamID {
		if err == nil || domain.IsKind(err, domain.KindNotFound) {
			return domain.NotFound("api key")
		}
		return err
	}
	if k.UserID != actor.UserID {
		if err := actor.Require(team.ActAdminister); err != nil {
			return err
		}
	}
	if err := s.d.APIKeys.Delete(ctx, actor.TeamID, id); err != nil {
		return err
	}
	s.changed(ctx, keyTag(id))
	return nil
}

// RevokeMemberKeys deletes the user's keys in the team, when their
// membership ends, and returns their ids. Called with a unit of work's
// context, it joins the unit; MembershipChanged, once the unit has
// committed, evicts the keys with the membership.
func (s *Service) RevokeMemberKeys(ctx context.Context, teamID, userID string) ([]string, error) {
	return s.d.APIKeys.DeleteByMember(ctx, teamID, userID)
}

// Me is the caller as the API shows them.
type Me struct {
	User account.User
	Team team.Team
	Role team.Role
}

// Me returns the actor's user, active team and role.
func (s *Service) Me(ctx context.Context, actor team.Actor) (Me, error) {
	u, err := s.d.Users.ByID(ctx, actor.UserID)
	if err != nil {
		return Me{}, err
	}
	t, err := s.d.Teams.ByID(ctx, actor.TeamID)
	if err != nil {
		return Me{}, err
	}
	return Me{User: u, Team: t, Role: actor.Role}, nil
}
