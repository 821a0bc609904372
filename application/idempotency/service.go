// Package idempotency owns the Idempotency-Key rule of the API: the same
// key with the same request, within the retention window, gets the first
// response again without the work being done twice; the same key with
// another request is refused.
package idempotency

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"maps"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// Retention is how long a key's response is kept (API.md: 24 h).
const Retention = 24 * time.Hour

// inProgressTTL bounds how long a reservation outlives a request that never
// finished (a crashed instance): after it, the key may be used again.
const inProgressTTL = 5 * time.Minute

// MaxKeyLength bounds the header's value.
const MaxKeyLength = 255

// Service applies the rule over an IdempotencyStore.
type Service struct {
	store ports.IdempotencyStore
	log   *slog.Logger
}

// New returns the service.
func New(store ports.IdempotencyStore, log *slog.Logger) *Service {
	return &Service{store: store, log: log}
}

// Request is the request a key is presented with.
type Request struct {
	Key    string
	Method string
	Path   string
	Body   []byte
}

// Begun is the outcome of Begin: either a replay of the first response, or
// a reservation the caller must Finish.
type Begun struct {
	// Replay is the first request's response; nil when this request must
	// run.
	Replay *ports.IdempotencyRecord
	key    string
	fp     []byte
}

// Begin looks the key up in the actor's scope (a key is one user's in one
// team). A request with the same key and another method, path or body is
// a validation error; one whose first request is still running is a
// conflict.
func (s *Service) Begin(ctx context.Context, actor team.Actor, r Request) (Begun, error) {
	if r.Key == "" || len(r.Key) > MaxKeyLength || !printable(r.Key) {
		return Begun{}, domain.BadRequest("Idempotency-Key must be 1 to 255 printable ASCII characters")
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(r.Method), []byte(r.Path), r.Body} {
		h.Write([]byte{byte(len(part) >> 24), byte(len(part) >> 16), byte(len(part) >> 8), byte(len(part))})
		h.Write(part)
	}
	b := Begun{key: "idem:" + actor.TeamID + ":" + actor.UserID + ":" + r.Key, fp: h.Sum(nil)}
	rec, reserved, err := s.store.Reserve(ctx, b.key, b.fp, inProgressTTL)
	if err != nil || reserved {
		return b, err
	}
	if string(rec.Fingerprint) != string(b.fp) {
		return Begun{}, domain.Invalid("Idempotency-Key", "was already used with a different request; use a new key")
	}
	if !rec.Done {
		return Begun{}, domain.Conflict("a request with this Idempotency-Key is still in progress; retry later")
	}
	b.Replay = &rec
	return b, nil
}

// Finish keeps the response of a reserved request for Retention. A server
// error is not kept: the key is freed so that the client's retry runs.
func (s *Service) Finish(ctx context.Context, b Begun, status int, headers map[string]string, body []byte) {
	ctx = context.WithoutCancel(ctx)
	var err error
	if status >= 500 {
		err = s.store.Release(ctx, b.key)
	} else {
		err = s.store.Complete(ctx, b.key, ports.IdempotencyRecord{
			Fingerprint: b.fp, Done: true, Status: status, Headers: maps.Clone(headers), Body: body,
		}, Retention)
	}
	if err != nil {
		// The response still goes out; a retry with this key will then
		// either see the reservation lapse or run again.
		s.log.ErrorContext(ctx, "keeping an idempotent response failed", "error", err.Error())
	}
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
