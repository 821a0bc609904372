package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
)

// Credentials are what a request presents: a bearer access token or an API
// key, and optionally the team it wants to act in.
type Credentials struct {
	BearerToken string
	APIKey      string
	TeamID      string
}

var errNoCredentials = domain.Unauthorized("authentication required: send Authorization: Bearer <token> or X-API-Key")
var errBadAPIKey = domain.Unauthorized("invalid API key")
var errRevokedToken = domain.Unauthorized("access token was revoked (password reset or sign-out of every session); sign in again")

// sessionVersion is the user's current session version. It is read on
// every bearer request, so it is cached (in Redis when configured, shared by
// every instance); ending the user's sessions evicts it.
func (s *Service) sessionVersion(ctx context.Context, userID string) (int, error) {
	raw, hit, err := s.d.Cache.Get(ctx, sessionCacheKey(userID))
	if err != nil {
		s.d.Log.WarnContext(ctx, "session version cache read failed", "error", err.Error())
	}
	if hit {
		if v, err := strconv.Atoi(string(raw)); err == nil {
			return v, nil
		}
	}
	raw, err = s.cacheFromStore(ctx, sessionCacheKey(userID), func(ctx context.Context) ([]byte, error) {
		u, err := s.d.Users.ByID(ctx, userID)
		if err != nil {
			return nil, err
		}
		return []byte(strconv.Itoa(u.SessionVersion)), nil
	})
	if domain.IsKind(err, domain.KindNotFound) {
		return 0, errRevokedToken
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(raw))
}

// cacheFromStore reads a value from the store and caches it. A change that
// commits after the read evicts the entry, but that eviction may land before
// this write and be undone by it, leaving a revoked token or key trusted
// until the entry expires. So the store is read once more after the write:
// either the eviction came after the write, or the second read sees the
// change and the entry is corrected (or dropped when the value is gone).
func (s *Service) cacheFromStore(ctx context.Context, key string, read func(context.Context) ([]byte, error)) ([]byte, error) {
	v, err := read(ctx)
	if err != nil {
		return nil, err
	}
	if !s.cacheSet(ctx, key, v) {
		return v, nil // nothing written, nothing stale
	}
	again, err := read(ctx)
	if err != nil {
		s.forget(ctx, key)
		return nil, err
	}
	if !bytes.Equal(again, v) {
		s.cacheSet(ctx, key, again)
	}
	return again, nil
}

func (s *Service) cacheSet(ctx context.Context, key string, v []byte) bool {
	if err := s.d.Cache.Set(ctx, key, v, s.d.Policy.APIKeyCacheTTL); err != nil {
		s.d.Log.WarnContext(ctx, "cache write failed", "key", key, "error", err.Error())
		return false
	}
	return true
}

func sessionCacheKey(userID string) string { return "sessver:" + userID }

// Authenticate turns credentials into the actor of a request: the user, the
// team they act in (the token's default team, the key's team, or X-Team-ID)
// and their role there. A team the user is not an active member of is not
// found, so its existence is not revealed.
func (s *Service) Authenticate(ctx context.Context, c Credentials) (team.Actor, error) {
	var userID, teamID, keyID string
	switch {
	case c.BearerToken != "" && c.APIKey != "":
		return team.Actor{}, domain.Unauthorized("send either a bearer token or an API key, not both")
	case c.BearerToken != "":
		claims, err := s.d.Tokens.Verify(c.BearerToken)
		if err != nil {
			return team.Actor{}, err
		}
		current, err := s.sessionVersion(ctx, claims.UserID)
		if err != nil {
			return team.Actor{}, err
		}
		if claims.SessionVersion < current {
			return team.Actor{}, errRevokedToken
		}
		userID, teamID = claims.UserID, claims.TeamID
		if c.TeamID != "" {
			teamID = c.TeamID
		}
	case c.APIKey != "":
		k, err := s.apiKey(ctx, c.APIKey)
		if err != nil {
			return team.Actor{}, err
		}
		// A key is bound to its team: it cannot be pointed at another one.
		if c.TeamID != "" && c.TeamID != k.TeamID {
			return team.Actor{}, domain.NotFound("team")
		}
		userID, teamID, keyID = k.UserID, k.TeamID, k.ID
	default:
		return team.Actor{}, errNoCredentials
	}
	m, err := s.d.Memberships.ByUser(ctx, teamID, userID)
	if domain.IsKind(err, domain.KindNotFound) || (err == nil && m.Status != team.StatusActive) {
		if keyID != "" {
			// A key lives only as long as its membership: one whose
			// membership ended is a revoked credential, not a team the
			// caller may not see.
			return team.Actor{}, errBadAPIKey
		}
		return team.Actor{}, domain.NotFound("team")
	}
	if err != nil {
		return team.Actor{}, err
	}
	return team.Actor{UserID: userID, TeamID: teamID, MemberID: m.ID, Role: m.Role, APIKeyID: keyID}, nil
}

// cachedKey is what the cache keeps of a verified key: never the secret.
type cachedKey struct {
	ID     string `json:"id"`
	TeamID string `json:"teamId"`
	UserID string `json:"userId"`
	Hash   []byte `json:"hash"`
}

const apiKeyPrefix = "psvc_"

// apiKey verifies a presented key. Keys are looked up on every request, so a
// verified key's record is cached; deleting the key evicts it.
func (s *Service) apiKey(ctx context.Context, presented string) (cachedKey, error) {
	id, secret, ok := parseAPIKey(presented)
	if !ok {
		return cachedKey{}, errBadAPIKey
	}
	var k cachedKey
	raw, hit, err := s.d.Cache.Get(ctx, apiKeyCacheKey(id))
	if err != nil {
		s.d.Log.WarnContext(ctx, "api key cache read failed", "error", err.Error())
	}
	if !hit || json.Unmarshal(raw, &k) != nil {
		raw, err := s.cacheFromStore(ctx, apiKeyCacheKey(id), func(ctx context.Context) ([]byte, error) {
			stored, err := s.d.APIKeys.ByID(ctx, id)
			if err != nil {
				return nil, err
			}
			return json.Marshal(cachedKey{ID: stored.ID, TeamID: stored.TeamID, UserID: stored.UserID, Hash: stored.Hash})
		})
		if domain.IsKind(err, domain.KindNotFound) {
			return cachedKey{}, errBadAPIKey
		}
		if err != nil {
			return cachedKey{}, err
		}
		if err := json.Unmarshal(raw, &k); err != nil {
			return cachedKey{}, err
		}
	}
	if !account.SecretMatches(k.Hash, secret) {
		return cachedKey{}, errBadAPIKey
	}
	return k, nil
}

func apiKeyCacheKey(id string) string { return "apikey:" + id }

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
	return s.d.Cache.Delete(ctx, apiKeyCacheKey(id))
}

// RevokeMemberKeys deletes the user's keys in the team, when their
// membership ends, and returns the ids for ForgetAPIKeys. Called with a
// unit of work's context, it joins the unit.
func (s *Service) RevokeMemberKeys(ctx context.Context, teamID, userID string) ([]string, error) {
	return s.d.APIKeys.DeleteByMember(ctx, teamID, userID)
}

// ForgetAPIKeys evicts revoked keys from the cache. It is called once their
// deletion has committed, so that no request can cache them again.
func (s *Service) ForgetAPIKeys(ctx context.Context, ids []string) {
	for _, id := range ids {
		s.forget(ctx, apiKeyCacheKey(id))
	}
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
