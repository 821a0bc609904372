package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.IdempotencyStore = (*Redis)(nil)

// reserveAttempts bounds Reserve's SET NX / GET round trips. A second attempt
// is only needed when the record found taken by SET NX is gone by the GET
// (released or expired in between); a key churning faster than that is
// reported as an error rather than looped on.
const reserveAttempts = 2

// Redis is an idempotency store in Redis, shared by every instance using the
// same database and prefix. SET NX decides which reservation wins, so exactly
// one instance runs a request whatever the number of instances.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a store that keeps its records in client under prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// redisRecord is the JSON stored under a key. It lives here, not as tags on
// ports.IdempotencyRecord, because the encoding is this adapter's business.
// []byte fields encode as base64.
type redisRecord struct {
	Fingerprint []byte            `json:"fingerprint"`
	Done        bool              `json:"done"`
	Status      int               `json:"status,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        []byte            `json:"body,omitempty"`
}

// Reserve stores an in-progress record for ttl, which must be positive, when
// key is free (SET NX) and reports true; otherwise it returns the record
// there and false.
func (r *Redis) Reserve(ctx context.Context, key string, fingerprint []byte, ttl time.Duration) (ports.IdempotencyRecord, bool, error) {
	if err := checkTTL(ttl); err != nil {
		return ports.IdempotencyRecord{}, false, err
	}
	rec := ports.IdempotencyRecord{Fingerprint: cloneBytes(fingerprint)}
	value, err := encode(rec)
	if err != nil {
		return ports.IdempotencyRecord{}, false, err
	}
	for range reserveAttempts {
		ok, err := r.client.SetNX(ctx, r.prefix+key, value, ttl).Result()
		if err != nil {
			return ports.IdempotencyRecord{}, false, fmt.Errorf("idempotency: reserving in redis: %w", err)
		}
		if ok {
			return rec, true, nil
		}
		raw, err := r.client.Get(ctx, r.prefix+key).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // freed between SET NX and GET: try to take it
		}
		if err != nil {
			return ports.IdempotencyRecord{}, false, fmt.Errorf("idempotency: reading from redis: %w", err)
		}
		existing, err := decode(raw)
		if err != nil {
			return ports.IdempotencyRecord{}, false, err
		}
		return existing, false, nil
	}
	return ports.IdempotencyRecord{}, false, errors.New("idempotency: key was taken and freed again while reserving it")
}

// Complete replaces key's record with rec, marked done, for ttl, which must
// be positive. It is a plain SET rather than SET XX: a record whose
// reservation has expired is stored all the same, as the response is still
// worth replaying, and replacing and storing anew are then one and the same
// write, so one round trip does both.
func (r *Redis) Complete(ctx context.Context, key string, rec ports.IdempotencyRecord, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	rec.Done = true
	value, err := encode(rec)
	if err != nil {
		return err
	}
	if err := r.client.Set(ctx, r.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("idempotency: writing to redis: %w", err)
	}
	return nil
}

// Release removes key's record; releasing a free key is not an error.
func (r *Redis) Release(ctx context.Context, key string) error {
	if err := r.client.Del(ctx, r.prefix+key).Err(); err != nil {
		return fmt.Errorf("idempotency: deleting from redis: %w", err)
	}
	return nil
}

// encode and decode keep the record's content out of their errors: a
// response body may hold anything the request returned.
func encode(rec ports.IdempotencyRecord) ([]byte, error) {
	b, err := json.Marshal(redisRecord(rec))
	if err != nil {
		return nil, fmt.Errorf("idempotency: encoding record: %w", err)
	}
	return b, nil
}

func decode(raw []byte) (ports.IdempotencyRecord, error) {
	var rec redisRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			// A syntax error quotes the offending character; keep only where.
			return ports.IdempotencyRecord{}, fmt.Errorf("idempotency: stored record is not valid JSON (offset %d)", syntax.Offset)
		}
		return ports.IdempotencyRecord{}, fmt.Errorf("idempotency: decoding stored record: %w", err)
	}
	return ports.IdempotencyRecord(rec), nil
}
