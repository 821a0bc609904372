package auth

import (
	"context"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
)

// A dashboard session is a refresh token that the web console keeps in an
// HttpOnly cookie and presents as it is, without rotating it: concurrent
// page loads and the pages' own polling would otherwise race each other's
// rotation, and a rotation race reads as a replay that revokes the family.
// It ends as a refresh token ends: signed out (its family revoked), a
// password reset (every token of the user revoked), or its expiry. One that
// was rotated through /auth/refresh was taken out of the console by
// someone, so it no longer opens it.

var errSessionEnded = domain.Unauthorized("the dashboard session has ended; sign in again")

// liveSession is the refresh token that token names while it can still open
// the dashboard.
func (s *Service) liveSession(ctx context.Context, token string) (account.RefreshToken, error) {
	id, secret, ok := account.SplitToken(token)
	if !ok {
		return account.RefreshToken{}, errSessionEnded
	}
	rt, err := s.d.RefreshTokens.ByID(ctx, id)
	if domain.IsKind(err, domain.KindNotFound) {
		return account.RefreshToken{}, errSessionEnded
	}
	if err != nil {
		return account.RefreshToken{}, err
	}
	now := s.d.Clock.Now()
	if !account.SecretMatches(rt.Hash, secret) || rt.RevokedAt != nil || rt.UsedAt != nil || !now.Before(rt.ExpiresAt) {
		return account.RefreshToken{}, errSessionEnded
	}
	return rt, nil
}

// authenticateSession resolves a dashboard session: its user, in the team
// the console asks for (its sign-in team by default).
func (s *Service) authenticateSession(ctx context.Context, c Credentials) (team.Actor, error) {
	rt, err := s.liveSession(ctx, c.SessionToken)
	if err != nil {
		return team.Actor{}, err
	}
	teamID := rt.TeamID
	if c.TeamID != "" {
		teamID = c.TeamID
	}
	m, err := s.activeMembership(ctx, teamID, rt.UserID)
	if err != nil {
		if domain.IsKind(err, domain.KindNotFound) {
			return team.Actor{}, domain.NotFound("team")
		}
		return team.Actor{}, err
	}
	return team.Actor{UserID: rt.UserID, TeamID: teamID, MemberID: m.ID, Role: m.Role}, nil
}

// SignOut ends the dashboard session token and every token of its family.
// A session that has already ended is signed out already.
func (s *Service) SignOut(ctx context.Context, token string) error {
	rt, err := s.liveSession(ctx, token)
	if domain.IsKind(err, domain.KindUnauthorized) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.d.RefreshTokens.RevokeFamily(ctx, rt.FamilyID, s.d.Clock.Now().UTC())
}
