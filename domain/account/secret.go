package account

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// A token handed to a user (refresh, reset, invitation) is "<id>.<secret>":
// the id finds the stored record, which keeps only Digest(secret).

// NewSecret returns n random bytes, hex-encoded.
func NewSecret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// Digest is what is stored of a secret. The secrets are random, so a fast
// hash is enough: there is nothing to guess.
func Digest(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// SecretMatches reports, in constant time, whether secret is the one whose
// Digest is hash.
func SecretMatches(hash []byte, secret string) bool {
	return subtle.ConstantTimeCompare(hash, Digest(secret)) == 1
}

// SplitToken splits "<id>.<secret>".
func SplitToken(s string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(s, ".")
	return id, secret, ok && id != "" && secret != "" && len(s) <= 256
}
