// Package token owns access tokens: HS256-signed JWTs that carry the user and
// their default team, checked strictly (one algorithm, one issuer, an expiry
// always present) so that a token from anywhere else is refused.
package token

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.TokenIssuer = (*JWT)(nil)

// clockSkew is how far apart the clocks of instances behind one load
// balancer may be: a token issued by a clock slightly ahead is not "issued
// in the future" for the instance that checks it.
const clockSkew = 5 * time.Second

// invalidMessage is all a client learns about a refused token; the reason is
// kept in the error's chain for logs.
const invalidMessage = "invalid or expired access token"

type claims struct {
	jwt.RegisteredClaims
	TeamID string `json:"tid"`
	// SessionVersion ("ver") is the user's session version at issue; a
	// token without it is of version 0.
	SessionVersion int `json:"ver,omitempty"`
}

// JWT issues and verifies HS256 access tokens.
type JWT struct {
	secret []byte
	issuer string
	ttl    time.Duration
	clock  ports.Clock
	ids    ports.IDs
	parser *jwt.Parser

	// verified remembers tokens that passed every check, by their exact
	// text: a client sends the same token on every request for its whole
	// life, and parsing and checking it again (base64, JSON, HMAC) cost
	// more than the rest of a cached read. Only the expiry can change the
	// answer for the same text, so a hit checks it again.
	mu       sync.RWMutex
	verified map[string]ports.AccessClaims
}

// verifiedMax bounds the remembered tokens; a full memo drops one entry per
// new token, so a flood of distinct tokens costs a parse each, as without it.
const verifiedMax = 8192

// NewJWT returns an issuer that signs with secret, names itself issuer in
// "iss", and makes tokens valid for ttl on c's time.
func NewJWT(secret []byte, issuer string, ttl time.Duration, c ports.Clock, ids ports.IDs) *JWT {
	return &JWT{
		secret: append([]byte(nil), secret...),
		issuer: issuer,
		ttl:    ttl,
		clock:  c,
		ids:    ids,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithIssuer(issuer),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithTimeFunc(c.Now),
			jwt.WithLeeway(clockSkew),
		),
		verified: map[string]ports.AccessClaims{},
	}
}

// Issue signs a token for c.UserID and c.TeamID. The returned claims carry
// the times as the token states them, in whole seconds.
func (j *JWT) Issue(c ports.AccessClaims) (string, ports.AccessClaims, error) {
	if c.UserID == "" || c.TeamID == "" {
		return "", ports.AccessClaims{}, errors.New("token: user and team are required")
	}
	if len(j.secret) == 0 {
		return "", ports.AccessClaims{}, errors.New("token: signing key is empty")
	}
	now := j.clock.Now().UTC().Truncate(time.Second)
	c.ID = j.ids.New("jti")
	c.IssuedAt = now
	c.ExpiresAt = now.Add(j.ttl)
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    j.issuer,
			Subject:   c.UserID,
			ID:        c.ID,
			IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
			ExpiresAt: jwt.NewNumericDate(c.ExpiresAt),
		},
		TeamID:         c.TeamID,
		SessionVersion: c.SessionVersion,
	})
	signed, err := t.SignedString(j.secret)
	if err != nil {
		return "", ports.AccessClaims{}, fmt.Errorf("token: signing: %w", err)
	}
	return signed, c, nil
}

// Verify returns the claims of a token this issuer signed that has not
// expired. Every failure is the same unauthorized error to the client.
func (j *JWT) Verify(token string) (ports.AccessClaims, error) {
	j.mu.RLock()
	c, hit := j.verified[token]
	j.mu.RUnlock()
	if hit {
		if j.clock.Now().Before(c.ExpiresAt.Add(clockSkew)) {
			return c, nil
		}
		j.mu.Lock()
		delete(j.verified, token)
		j.mu.Unlock()
	}
	c, err := j.parse(token)
	if err != nil {
		return ports.AccessClaims{}, err
	}
	j.mu.Lock()
	if len(j.verified) >= verifiedMax {
		for k := range j.verified {
			delete(j.verified, k)
			break
		}
	}
	j.verified[token] = c
	j.mu.Unlock()
	return c, nil
}

func (j *JWT) parse(token string) (ports.AccessClaims, error) {
	var cl claims
	_, err := j.parser.ParseWithClaims(token, &cl, func(t *jwt.Token) (any, error) {
		// WithValidMethods already pins HS256; checking the type too means a
		// change of that option cannot turn the secret into a public key.
		if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok {
			return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
		}
		return j.secret, nil
	})
	if err == nil {
		switch {
		case cl.Subject == "":
			err = errors.New("token has no subject")
		case cl.TeamID == "":
			err = errors.New("token has no team")
		case cl.ID == "":
			err = errors.New("token has no id")
		case cl.IssuedAt == nil:
			err = errors.New("token has no issue time")
		case cl.SessionVersion < 0:
			err = errors.New("token has a negative session version")
		}
	}
	if err != nil {
		e := domain.Unauthorized(invalidMessage)
		e.Err = err
		return ports.AccessClaims{}, e
	}
	return ports.AccessClaims{
		UserID:         cl.Subject,
		TeamID:         cl.TeamID,
		ID:             cl.ID,
		IssuedAt:       cl.IssuedAt.UTC(),
		ExpiresAt:      cl.ExpiresAt.UTC(),
		SessionVersion: cl.SessionVersion,
	}, nil
}
