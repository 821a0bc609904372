// Package secretbox owns the encryption of secrets kept at rest (webhook
// signing secrets): AES-256-GCM under a key derived from the service's
// SECRET_KEY, in a versioned format so the key can be rotated later.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.SecretBox = (*Box)(nil)

// Sealed format: version (1 byte) | nonce (12 bytes) | ciphertext and tag.
// The version names the key that sealed it: rotating SECRET_KEY adds a
// version, and Open keeps the old key for what was sealed under it.
const (
	version1 byte = 1
	// info separates this key from anything else derived from SECRET_KEY,
	// so the same secret never serves as two keys.
	info1 = "profilesvc secretbox v1 aes-256-gcm"
)

var (
	// ErrEmptyKey is returned by New for a missing key.
	ErrEmptyKey = errors.New("secretbox: empty key")
	// ErrOpen is returned by Open for a sealed secret that was altered,
	// truncated or sealed under another key.
	ErrOpen = errors.New("secretbox: cannot open: tampered with or sealed under another key")
)

// Box seals and opens secrets. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New derives the encryption key from the service's secret with
// HKDF-SHA256. The secret's length is the configuration's concern; an
// empty one is refused here because it would encrypt with a public key.
func New(key []byte) (*Box, error) {
	if len(key) == 0 {
		return nil, ErrEmptyKey
	}
	k, err := hkdf.Key(sha256.New, key, nil, info1, 32)
	if err != nil {
		return nil, fmt.Errorf("secretbox: derive key: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext under a fresh random nonce, so sealing the same
// secret twice gives different bytes.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plaintext)+b.aead.Overhead())
	out[0] = version1
	if _, err := rand.Read(out[1 : 1+ns]); err != nil {
		return nil, fmt.Errorf("secretbox: nonce: %w", err)
	}
	// The version byte is authenticated too, so it cannot be swapped to
	// make Open pick another key.
	return b.aead.Seal(out, out[1:1+ns], plaintext, out[:1]), nil
}

// Open decrypts what Seal returned; anything altered fails with ErrOpen.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns+b.aead.Overhead() {
		return nil, ErrOpen
	}
	if sealed[0] != version1 {
		return nil, fmt.Errorf("secretbox: unknown version %d", sealed[0])
	}
	plaintext, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], sealed[:1])
	if err != nil {
		return nil, ErrOpen
	}
	return plaintext, nil
}
