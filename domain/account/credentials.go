package account

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// MaxAPIKeyNameRunes bounds an API key's name.
const MaxAPIKeyNameRunes = 100

// APIKey lets a program act as one user inside one team. Only Hash (SHA-256 of
// the secret part) is stored; Prefix is a short, non-secret part shown in lists.
type APIKey struct {
	ID         string
	TeamID     string
	UserID     string
	Name       string
	Prefix     string
	Hash       []byte
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// NewAPIKey returns a key of userID in teamID, named name (trimmed, 1 to
// MaxAPIKeyNameRunes characters), keeping only the digest of its secret.
func NewAPIKey(id, teamID, userID, name, prefix, secret string, now time.Time) (APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxAPIKeyNameRunes || domain.UnsafeText(name) {
		return APIKey{}, domain.Invalid("name", "must be 1 to 100 characters without control or bidirectional formatting characters")
	}
	return APIKey{
		ID: id, TeamID: teamID, UserID: userID, Name: name, Prefix: prefix,
		Hash: Digest(secret), CreatedAt: now.UTC(),
	}, nil
}

// RefreshToken is one member of a rotation family. Every refresh consumes the
// presented token and issues the next one in the same family; presenting a
// consumed token revokes the whole family.
type RefreshToken struct {
	ID        string
	FamilyID  string
	UserID    string
	TeamID    string
	Hash      []byte
	IssuedAt  time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	RevokedAt *time.Time
}

// ResetToken is a single-use password-reset token.
type ResetToken struct {
	ID        string
	UserID    string
	Hash      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// Redeemable reports whether secret is the token's and the token is unused
// and unexpired at now.
func (t ResetToken) Redeemable(secret string, now time.Time) bool {
	return SecretMatches(t.Hash, secret) && t.UsedAt == nil && now.Before(t.ExpiresAt)
}
