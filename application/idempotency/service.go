// Package idempotency owns the Idempotency-Key rule of the API: the same
// key with the same request, within the retention window, gets the first
// response again without the work being done twice; the same key with
// another request is refused.
//
// A key is claimed in the primary store inside the unit of work of the
// request's effect, just before it commits: a request whose effect committed
// always has its record, and of two requests with one key only one commits
// (the other's effect rolls back and it answers with the first's response).
// A request that committed nothing keeps nothing, so its retry runs again.
package idempotency

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// Retention is how long a key's record is kept (API.md: 24 h).
const Retention = 24 * time.Hour

// MaxKeyLength bounds the header's value.
const MaxKeyLength = 255

// Defaults of Limits.
const (
	DefaultKeysPerTeam      = 10_000
	DefaultMaxResponseBytes = 64 << 10
)

// staleAfter is how long a claim may wait for its response before a replay
// says the response was lost (its instance died after the commit) rather
// than that the request is still running.
const staleAfter = 5 * time.Minute

// sweepBatch bounds the expired records deleted after each kept response:
// more than one per new record, so expired rows never pile up, and few
// enough that a request never pays for a large delete.
const sweepBatch = 100

// boundRetryAfter is the Retry-After of a team over its bound: records
// expire one by one over 24 h, so some room may free up at any time.
const boundRetryAfter = time.Minute

// Limits bound what the records of one team may cost.
type Limits struct {
	// KeysPerTeam is how many live records (24 h) a team may hold; a new
	// key beyond it is refused with 429.
	KeysPerTeam int
	// MaxResponseBytes is the largest response body kept for replays.
	MaxResponseBytes int
}

// Deps are the service's ports.
type Deps struct {
	Records ports.IdempotencyRecords
	Clock   ports.Clock
	Log     *slog.Logger
	Limits  Limits
}

// Service applies the rule over the records of the primary store.
type Service struct{ d Deps }

// New returns the service; zero limits take their defaults.
func New(d Deps) *Service {
	if d.Limits.KeysPerTeam <= 0 {
		d.Limits.KeysPerTeam = DefaultKeysPerTeam
	}
	if d.Limits.MaxResponseBytes <= 0 {
		d.Limits.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return &Service{d: d}
}

// Request is the request a key is presented with.
type Request struct {
	Key    string
	Method string
	Path   string
	Body   []byte
}

// Response is the response of a request that ran.
type Response struct {
	Status  int
	Headers map[string]string
	Body    []byte
	// Credentials marks a response that carries credentials shown once
	// (Cache-Control: no-store): it is never kept.
	Credentials bool
}

type claimState int

const (
	claimPending claimState = iota // no unit of the request has committed
	claimCommitted
	claimLost // another request with the key committed first
)

// Claim is a request's claim of its key. It travels in the request's
// context (WithClaim) to the units of work, which insert it.
type Claim struct {
	rec   ports.IdempotencyRecord
	mu    sync.Mutex
	state claimState
}

func (c *Claim) get() claimState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

func (c *Claim) set(s claimState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = s
}

// Begun is the outcome of Begin: either a replay of the first response, or
// a claim the request carries while it runs.
type Begun struct {
	// Replay is the first request's response; nil when this request must
	// run with Claim.
	Replay *ports.IdempotencyRecord
	Claim  *Claim
}

// Begin looks the key up in the actor's scope (a key is one user's in one
// team). A request with the same key and another method, path or body is
// a validation error; one whose first request is still running, or whose
// response is not kept, is a conflict; a new key of a team that holds its
// bound of keys is refused as rate limited.
func (s *Service) Begin(ctx context.Context, actor team.Actor, r Request) (Begun, error) {
	if r.Key == "" || len(r.Key) > MaxKeyLength || !printable(r.Key) {
		return Begun{}, domain.BadRequest("Idempotency-Key must be 1 to 255 printable ASCII characters")
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(r.Method), []byte(r.Path), r.Body} {
		h.Write([]byte{byte(len(part) >> 24), byte(len(part) >> 16), byte(len(part) >> 8), byte(len(part))})
		h.Write(part)
	}
	now := s.d.Clock.Now()
	c := &Claim{rec: ports.IdempotencyRecord{
		IdempotencyKey: ports.IdempotencyKey{TeamID: actor.TeamID, Scope: actor.UserID, Key: r.Key},
		Fingerprint:    h.Sum(nil),
		CreatedAt:      now,
		ExpiresAt:      now.Add(Retention),
	}}
	rec, found, err := s.d.Records.Find(ctx, c.rec.IdempotencyKey, now)
	if err != nil {
		return Begun{}, err
	}
	if found {
		replay, err := s.answer(rec, c, now)
		return Begun{Replay: replay}, err
	}
	n, err := s.d.Records.CountLive(ctx, actor.TeamID, now)
	if err != nil {
		return Begun{}, err
	}
	if n >= s.d.Limits.KeysPerTeam {
		return Begun{}, domain.RateLimited(fmt.Sprintf(
			"this team has used %d Idempotency-Key values in the last 24 hours, its limit; retry later, or send the request without Idempotency-Key",
			s.d.Limits.KeysPerTeam), boundRetryAfter)
	}
	return Begun{Claim: c}, nil
}

// answer is what a request gets for the record of its key.
func (s *Service) answer(rec ports.IdempotencyRecord, c *Claim, now time.Time) (*ports.IdempotencyRecord, error) {
	switch {
	case string(rec.Fingerprint) != string(c.rec.Fingerprint):
		return nil, domain.Invalid("Idempotency-Key", "was already used with a different request; use a new key")
	case !rec.Done && now.Sub(rec.CreatedAt) >= staleAfter:
		return nil, domain.Conflict("the first request with this Idempotency-Key took effect, but its response was lost; check the result before sending the request again with a new key")
	case !rec.Done:
		return nil, domain.Conflict("a request with this Idempotency-Key is still in progress; retry later")
	case rec.Withheld == ports.IdempotencyWithheldCredentials:
		return nil, domain.Conflict("the first request with this Idempotency-Key succeeded; the credentials it created were shown once and are not kept")
	case rec.Withheld != "":
		return nil, domain.Conflict(fmt.Sprintf(
			"the first request with this Idempotency-Key succeeded (status %d), but its response, larger than %d bytes, is not kept",
			rec.Status, s.d.Limits.MaxResponseBytes))
	}
	return &rec, nil
}

// Finish runs after the request's handler. When another request with the
// key committed first, this request's effect was rolled back: Finish then
// returns the first request's response (or the error a replay would get)
// in place of the handler's. Otherwise it keeps resp on the claim, if a unit
// of the request committed it, and returns nil.
func (s *Service) Finish(ctx context.Context, c *Claim, resp Response) (*ports.IdempotencyRecord, error) {
	ctx = context.WithoutCancel(ctx)
	now := s.d.Clock.Now()
	switch c.get() {
	case claimPending:
		return nil, nil
	case claimLost:
		rec, found, err := s.d.Records.Find(ctx, c.rec.IdempotencyKey, now)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, domain.Conflict("a request with this Idempotency-Key is still in progress; retry later")
		}
		return s.answer(rec, c, now)
	}
	rec := c.rec
	rec.Done, rec.Status = true, resp.Status
	switch {
	case resp.Credentials:
		rec.Withheld = ports.IdempotencyWithheldCredentials
	case len(resp.Body) > s.d.Limits.MaxResponseBytes:
		rec.Withheld = ports.IdempotencyWithheldTooLarge
	default:
		rec.Headers, rec.Body = maps.Clone(resp.Headers), resp.Body
	}
	if err := s.d.Records.Complete(ctx, rec); err != nil {
		// The response still goes out; a replay will find the claim and
		// answer 409 rather than run the request again.
		s.d.Log.ErrorContext(ctx, "keeping an idempotent response failed", "error", err.Error())
		return nil, nil
	}
	if _, err := s.d.Records.DeleteExpired(ctx, now, sweepBatch); err != nil {
		s.d.Log.WarnContext(ctx, "deleting expired idempotency records failed", "error", err.Error())
	}
	return nil, nil
}

type claimKey struct{}

// WithClaim returns ctx carrying c, for the units of work the request runs.
func WithClaim(ctx context.Context, c *Claim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// Claim inserts, into the unit ctx carries, the pending claim of the
// request ctx carries (WithClaim), if any: the unit of work calls it as
// its last statement (application/unit), so the claim commits with the
// request's effect. A key another request claimed first fails the unit, so
// that its effect rolls back.
func (s *Service) Claim(ctx context.Context) error {
	c, _ := ctx.Value(claimKey{}).(*Claim)
	if c == nil || c.get() != claimPending {
		return nil
	}
	// The claim's own time decides whether a record there has expired, so
	// that expiry follows the service's clock.
	ok, err := s.d.Records.Claim(ctx, c.rec, c.rec.CreatedAt)
	if err != nil {
		return err
	}
	if !ok {
		c.set(claimLost)
		return errKeyTaken
	}
	unit.OnCommit(ctx, func(context.Context) { c.set(claimCommitted) })
	return nil
}

// errKeyTaken fails the unit of a request that lost its key to another;
// Finish answers for it.
var errKeyTaken = domain.Conflict("a request with this Idempotency-Key is still in progress; retry later")

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
