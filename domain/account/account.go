// Package account owns users and their credentials: password rules, API keys,
// refresh-token families and password-reset tokens. Secrets are only ever held
// here as hashes; the plain values exist only in the response that creates them.
package account

import (
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// User is a person who signs in. Email is stored normalised (lower case).
type User struct {
	ID            string
	Email         string
	Name          string
	PasswordHash  string
	DefaultTeamID string
	// SessionVersion goes up each time every session of the user is cut
	// off (a password reset, a stolen refresh token): an access token
	// carries the version it was issued under, and one of an older version
	// is refused. A counter, unlike a time, cannot mistake a token issued
	// in the same second as the cut-off for one issued after it.
	SessionVersion int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// NormalizeEmail returns the form under which emails are stored and
// compared: trimmed, in Unicode NFC (so that "é" typed as one character or
// as "e" and a combining accent is one address), in lower case. Every path
// that takes an email calls it.
func NormalizeEmail(email string) string { return NFC(strings.ToLower(strings.TrimSpace(email))) }

// MaxEmailBytes bounds an email address (RFC 5321's path limit, less its
// brackets).
const MaxEmailBytes = 254

// ValidateEmail checks that email is a bare address.
func ValidateEmail(email string) error {
	if email == "" {
		return domain.Invalid("email", "is required")
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > MaxEmailBytes {
		return domain.Invalid("email", "must be a valid email address")
	}
	return nil
}

// NewUser checks the user's fields and returns the user to store.
func NewUser(id, email, name, passwordHash, defaultTeamID string, now time.Time) (User, error) {
	email = NormalizeEmail(email)
	name = strings.TrimSpace(name)
	var v domain.Validation
	if err := ValidateEmail(email); err != nil {
		v.Add("email", err.(*domain.Error).Fields[0].Issue)
	}
	switch {
	case name == "":
		v.Add("name", "is required")
	case utf8.RuneCountInString(name) > 200:
		v.Add("name", "must be at most 200 characters")
	case domain.UnsafeText(name):
		v.Add("name", "must not hold control or bidirectional formatting characters")
	}
	if err := v.Err(); err != nil {
		return User{}, err
	}
	now = now.UTC()
	return User{ID: id, Email: email, Name: name, PasswordHash: passwordHash, DefaultTeamID: defaultTeamID, CreatedAt: now, UpdatedAt: now}, nil
}
