package ports

import "time"

// AccessClaims are what an access token says about its bearer.
type AccessClaims struct {
	UserID    string
	TeamID    string
	ID        string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// SessionVersion is the user's session version when the token was
	// issued; a token of an older version than the user's is revoked.
	SessionVersion int
}

// TokenIssuer signs and verifies access tokens.
type TokenIssuer interface {
	// Issue signs c; ID, IssuedAt and ExpiresAt are filled in by the issuer and
	// returned.
	Issue(c AccessClaims) (token string, claims AccessClaims, err error)
	// Verify returns the claims of a valid token, or an unauthorized error for
	// a token that is malformed, expired, of another algorithm, key or issuer.
	Verify(token string) (AccessClaims, error)
}
