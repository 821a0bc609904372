package account

import (
	_ "embed"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// MinPasswordLength is the shortest password accepted, in characters.
const MinPasswordLength = 10

// commonPasswordsText is a well-known public list of the passwords people
// choose most, one a line, lower case; lines starting with # are comments.
//
//go:embed common_passwords.txt
var commonPasswordsText string

// commonPasswords is commonPasswordsText as a set.
var commonPasswords = func() map[string]struct{} {
	set := make(map[string]struct{}, 8000)
	for line := range strings.Lines(commonPasswordsText) {
		line = strings.TrimRight(line, "\n")
		if line != "" && !strings.HasPrefix(line, "#") {
			set[line] = struct{}{}
		}
	}
	return set
}()

// ValidatePassword checks the rules of a new password: long enough, not
// longer than maxBytes (the longest input the password hasher accepts: a
// longer password is refused rather than silently truncated), not one
// character repeated, and not a common password. Every refusal says why.
func ValidatePassword(password string, maxBytes int) error {
	if utf8.RuneCountInString(password) < MinPasswordLength {
		return domain.Invalid("password", "must be at least 10 characters")
	}
	if len(password) > maxBytes {
		return domain.Invalid("password", "must be at most "+strconv.Itoa(maxBytes)+" bytes")
	}
	if singleRepeat(password) {
		return domain.Invalid("password", "must not be one character repeated")
	}
	if isCommonPassword(password) {
		return domain.Invalid("password", "is too common: it is on a list of the passwords people choose most (perhaps with digits or symbols added); choose another")
	}
	return nil
}

func singleRepeat(s string) bool {
	first, _ := utf8.DecodeRuneInString(s)
	return strings.Trim(s, string(first)) == ""
}

// isCommonPassword reports whether password, ignoring case, is on the list
// of common passwords, or is such a password followed only by digits and
// symbols ("Password123!"): the first guesses of anyone who tries.
func isCommonPassword(password string) bool {
	p := strings.ToLower(password)
	if _, ok := commonPasswords[p]; ok {
		return true
	}
	base := strings.TrimRightFunc(p, func(r rune) bool { return r < utf8.RuneSelf && !isASCIILetter(r) })
	if base == p || utf8.RuneCountInString(base) < 4 {
		return false
	}
	_, ok := commonPasswords[base]
	return ok
}

func isASCIILetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }
