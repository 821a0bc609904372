// Package password owns password hashing: argon2id with OWASP's parameters,
// encoded in the PHC string format, with a bound on how many hashes run at
// once so that a burst of logins cannot exhaust memory.
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/argon2"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.PasswordHasher = (*Argon2id)(nil)

const (
	saltBytes = 16
	keyBytes  = 32
	// Limits on parameters read from a stored hash: a corrupted or planted
	// hash must not make one Verify allocate gigabytes or run for minutes.
	maxMemoryKiB = 1 << 20 // 1 GiB
	maxTime      = 64
	maxKeyBytes  = 128
)

// Params are argon2id's cost parameters and the hasher's limits.
type Params struct {
	// Memory is in KiB.
	Memory  uint32
	Time    uint32
	Threads uint8
	// MaxConcurrent bounds how many hashes (and verifications) run at once;
	// each holds Memory KiB while it runs.
	MaxConcurrent int
	// MaxBytes is the longest password accepted.
	MaxBytes int
}

// DefaultParams are OWASP's recommendation for argon2id (19 MiB, 2 passes, 1
// lane), with as many hashes at once as there are CPUs to run them.
func DefaultParams() Params {
	return Params{
		Memory:        19 * 1024,
		Time:          2,
		Threads:       1,
		MaxConcurrent: runtime.GOMAXPROCS(0),
		MaxBytes:      256,
	}
}

// Argon2id hashes new passwords with its Params and verifies hashes made
// with any parameters, read from the hash itself, so parameters can be raised
// without invalidating stored hashes.
type Argon2id struct {
	p Params
	// slots is a semaphore: a send takes a slot, a receive frees it.
	slots   chan struct{}
	running atomic.Int64
	peak    atomic.Int64
}

// NewArgon2id returns a hasher with p; MaxConcurrent below 1 is taken as 1.
func NewArgon2id(p Params) *Argon2id {
	p.MaxConcurrent = max(p.MaxConcurrent, 1)
	p.Threads = max(p.Threads, 1)
	return &Argon2id{p: p, slots: make(chan struct{}, p.MaxConcurrent)}
}

// MaxBytes is the longest password accepted.
func (h *Argon2id) MaxBytes() int { return h.p.MaxBytes }

// PeakConcurrent is the largest number of hashes seen running at once.
func (h *Argon2id) PeakConcurrent() int { return int(h.peak.Load()) }

// Hash returns the PHC encoding of a fresh salted argon2id hash of password.
func (h *Argon2id) Hash(ctx context.Context, password string) (string, error) {
	if err := h.checkLength(password); err != nil {
		return "", err
	}
	salt := make([]byte, saltBytes)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: reading salt: %w", err)
	}
	var key []byte
	err := h.withSlot(ctx, func() {
		key = argon2.IDKey([]byte(password), salt, h.p.Time, h.p.Memory, h.p.Threads, keyBytes)
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, h.p.Memory, h.p.Time, h.p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// Verify reports whether password matches encoded. A malformed hash is an
// error, not a mismatch, so that corrupt data is noticed.
func (h *Argon2id) Verify(ctx context.Context, encoded, password string) (bool, error) {
	if err := h.checkLength(password); err != nil {
		return false, err
	}
	d, err := decode(encoded)
	if err != nil {
		return false, err
	}
	var key []byte
	err = h.withSlot(ctx, func() {
		key = argon2.IDKey([]byte(password), d.salt, d.time, d.memory, d.threads, uint32(len(d.key)))
	})
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(key, d.key) == 1, nil
}

// checkLength refuses long passwords before any work: hashing them would let
// a caller buy much CPU per request, and truncating would accept a different
// password than the one given.
func (h *Argon2id) checkLength(password string) error {
	if len(password) > h.p.MaxBytes {
		return domain.Invalid("password", fmt.Sprintf("must be at most %d bytes", h.p.MaxBytes))
	}
	return nil
}

func (h *Argon2id) withSlot(ctx context.Context, fn func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.slots }()
	n := h.running.Add(1)
	defer h.running.Add(-1)
	for {
		p := h.peak.Load()
		if n <= p || h.peak.CompareAndSwap(p, n) {
			break
		}
	}
	fn()
	return nil
}

type decoded struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

var errMalformed = errors.New("password: stored hash is not an argon2id PHC string")

func decode(encoded string) (decoded, error) {
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return decoded{}, errMalformed
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || fmt.Sprintf("v=%d", version) != parts[2] {
		return decoded{}, errMalformed
	}
	if version != argon2.Version {
		return decoded{}, fmt.Errorf("password: argon2 version %d is not supported", version)
	}
	var d decoded
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &d.memory, &d.time, &threads); err != nil ||
		fmt.Sprintf("m=%d,t=%d,p=%d", d.memory, d.time, threads) != parts[3] {
		return decoded{}, errMalformed
	}
	if d.time < 1 || d.time > maxTime || threads < 1 || threads > 255 ||
		d.memory < 8*threads || d.memory > maxMemoryKiB {
		return decoded{}, fmt.Errorf("password: stored hash has parameters out of range (%s)", parts[3])
	}
	d.threads = uint8(threads)
	var err error
	if d.salt, err = base64.RawStdEncoding.Strict().DecodeString(parts[4]); err != nil || len(d.salt) < 8 {
		return decoded{}, errMalformed
	}
	if d.key, err = base64.RawStdEncoding.Strict().DecodeString(parts[5]); err != nil ||
		len(d.key) < 16 || len(d.key) > maxKeyBytes {
		return decoded{}, errMalformed
	}
	return d, nil
}
