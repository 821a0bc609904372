package account

import "time"

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

// Usable reports whether the token may still be exchanged at now.
func (t RefreshToken) Usable(now time.Time) bool {
	return t.UsedAt == nil && t.RevokedAt == nil && now.Before(t.ExpiresAt)
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

// Usable reports whether the token may still be redeemed at now.
func (t ResetToken) Usable(now time.Time) bool {
	return t.UsedAt == nil && now.Before(t.ExpiresAt)
}
